import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { openDatabase } from './database/data-source';
import { LocalBus } from './local-bus';

@Injectable()
class DatabaseCloser implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/**
 * Configuration (with the installation's layout, `config.install`), the database connection and the
 * in-process event bus, shared by every module.
 */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: AppConfig, useValue: config }, { provide: DataSource, useFactory: () => openDatabase(config) }, LocalBus, DatabaseCloser],
      exports: [AppConfig, DataSource, LocalBus],
    };
  }
}
