// src owns the entry points: the API and worker roles (this module), the job runner child process, the OpenAPI document.
import { DynamicModule, Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import type { AppConfig } from './config/app-config';
import { CheckpointsModule } from './checkpoints/checkpoints.module';
import { ConfigModule } from './config/config.module';
import { CoreModule } from './core/core.module';
import { DatabaseModule } from './database/database.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { DatasetsModule } from './datasets/datasets.module';
import { HealthModule } from './health/health.module';
import { JobsModule } from './jobs-api/jobs.module';
import { RegistryModule } from './registry/registry.module';
import { QueueModule } from './scheduler/queue.module';
import { SchedulerModule } from './scheduler/scheduler.module';
import { ServingModule } from './serving/serving.module';
import { WorkerModule } from './scheduler/worker.module';
import { SessionRelayModule } from './sessions/session-relay.module';
import { SessionsModule } from './sessions/sessions.module';
import { TinkerModule } from './tinker/tinker.module';

/** Which roles this process plays; where the installation's files are comes with the config (`config.install`). */
export interface AppRoles {
  api: boolean;
  worker: boolean;
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, roles: AppRoles): DynamicModule {
    const imports: DynamicModule['imports'] = [ConfigModule.forRoot(config), CoreModule, DatabaseModule.forRoot(config), QueueModule];
    if (roles.api) {
      imports.push(AuthModule, JobsModule, SchedulerModule, HealthModule, RegistryModule);
      imports.push(CheckpointsModule, ServingModule);
      imports.push(SessionsModule, DatasetsModule, DashboardModule, TinkerModule);
    }
    if (roles.worker) imports.push(WorkerModule, SessionRelayModule);
    return { module: AppModule, imports };
  }
}
