// src/database owns the data source (every module's entities), the migrations and the connection.
import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { openDatabase } from './data-source';

@Injectable()
class DatabaseCloser implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/**
 * The database connection, opened (and migrated) at boot, for every module's repositories. It lives above
 * the feature folders because it lists their entities (`data-source.ts`).
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [{ provide: DataSource, useFactory: () => openDatabase(config) }, DatabaseCloser],
      exports: [DataSource],
    };
  }
}
