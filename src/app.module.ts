import { join } from 'node:path';
import { DynamicModule, Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import type { AppConfig } from './config/app-config';
import { CoreModule } from './core/core.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { DatasetsModule } from './datasets/datasets.module';
import { HealthModule } from './health/health.module';
import { JobsModule } from './jobs/jobs.module';
import { RegistryModule } from './registry/registry.module';
import { QueueModule } from './scheduler/queue.module';
import { SchedulerModule } from './scheduler/scheduler.module';
import { InferenceModule } from './inference/inference.module';
import { ServingModule } from './inference/serving.module';
import { WorkerModule } from './scheduler/worker.module';
import { SessionRelayModule } from './sessions/session-relay.module';
import { SessionsModule } from './sessions/sessions.module';

export interface AppRoles {
  api: boolean;
  worker: boolean;
  /** Compiled job runner entry (`dist/runner/job-runner.main.js`); needed by the worker role. */
  runnerEntry?: string;
  /** The server package's folder: its declared dependencies are searched for environments. */
  hostRoot: string;
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, roles: AppRoles): DynamicModule {
    const imports: DynamicModule['imports'] = [CoreModule.forRoot(config, roles.hostRoot), QueueModule];
    if (roles.api) {
      const pluginsDir = config.values.plugins_dir ?? join(roles.hostRoot, 'plugins');
      imports.push(AuthModule, JobsModule, SchedulerModule, HealthModule, RegistryModule.forRoot({ hostRoot: roles.hostRoot, pluginsDir }));
      imports.push(ServingModule.forRoot({ hostRoot: roles.hostRoot }), InferenceModule);
      imports.push(SessionsModule, DatasetsModule, DashboardModule.forRoot({ hostRoot: roles.hostRoot }));
    }
    if (roles.worker) {
      if (!roles.runnerEntry) throw new Error('The worker role needs the job runner entry point');
      imports.push(WorkerModule.forRoot(roles.runnerEntry), SessionRelayModule);
    }
    return { module: AppModule, imports };
  }
}
