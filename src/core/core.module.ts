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

/** The server package's folder (its `dist/` holds the entry files of child processes and threads). */
export const HOST_ROOT = Symbol('HostRoot');

/** Configuration, the database connection and the in-process event bus, shared by every module. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, hostRoot: string): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: HOST_ROOT, useValue: hostRoot },
        { provide: DataSource, useFactory: () => openDatabase(config) },
        LocalBus,
        DatabaseCloser,
      ],
      exports: [AppConfig, HOST_ROOT, DataSource, LocalBus],
    };
  }
}
