import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { join } from 'node:path';
import { AppConfig } from '../config/app-config';
import { ModelPool } from './model-pool';

/** The API's pool of model server processes, shut down with the application. */
@Injectable()
export class ModelPoolService extends ModelPool implements OnApplicationShutdown {
  constructor(config: AppConfig) {
    const logger = new Logger('Serving');
    super({
      entry: config.install.modelServerEntry,
      maxModels: config.values.serving_max_models,
      idleMs: config.values.serving_idle_seconds * 1000,
      loadTimeoutMs: 120_000,
      requestTimeoutMs: config.values.serving_request_timeout_seconds * 1000,
      home: config.home,
      jobsDir: join(config.home, 'jobs'),
      engine: config.engine,
      log: (line) => logger.debug(line),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
