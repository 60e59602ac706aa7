import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { join } from 'node:path';
import { AppConfig } from '../config/app-config';
import type { JobResources } from '../jobs/job.entity';
import { DevicePoolService } from '../scheduler/device-pool.service';
import { userModelsDir } from '../models/user-model-files';
import { HubModelsService } from './hub-models.service';
import { ModelPool } from './model-pool';

/** What one model server holds while it runs: one CPU slot (its engine's threads), no GPU. */
export const MODEL_SERVER_RESOURCES: JobResources = { gpus: 0, cpu_slots: 1 };

/** The API's pool of model server processes, on devices of the process's device pool, shut down with the application. */
@Injectable()
export class ModelPoolService extends ModelPool implements OnApplicationShutdown {
  constructor(config: AppConfig, devices: DevicePoolService, hubModels: HubModelsService) {
    const logger = new Logger('Serving');
    super({
      entry: config.install.modelServerEntry,
      maxModels: config.values.serving_max_models,
      idleMs: config.values.serving_idle_seconds * 1000,
      loadTimeoutMs: 120_000,
      requestTimeoutMs: config.values.serving_request_timeout_seconds * 1000,
      home: config.home,
      jobsDir: join(config.home, 'jobs'),
      // Chat serves jobs' checkpoints, uploaded models and the snapshots of this machine's Hub cache; a
      // Tinker checkpoint's base may also be a model folder under model_roots.
      modelRoots: [join(config.home, 'jobs'), userModelsDir(config.home), hubModels.cacheDir, ...config.values.model_roots],
      engine: config.engine,
      log: (line) => logger.debug(line),
      devices: {
        acquire: async (timeoutMs, server) => (await devices.get()).acquire(MODEL_SERVER_RESOURCES, timeoutMs, server),
        release: (ids) => void devices.get().then((pool) => pool.release(ids)),
      },
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
