import { DynamicModule, Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import type { AppConfig } from './config/app-config';
import { CoreModule } from './core/core.module';
import { HealthModule } from './health/health.module';
import { JobsModule } from './jobs/jobs.module';
import { QueueModule } from './scheduler/queue.module';
import { SchedulerModule } from './scheduler/scheduler.module';
import { WorkerModule } from './scheduler/worker.module';

export interface AppRoles {
  api: boolean;
  worker: boolean;
  /** Compiled job runner entry (`dist/runner/job-runner.main.js`); needed by the worker role. */
  runnerEntry?: string;
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, roles: AppRoles): DynamicModule {
    const imports: DynamicModule['imports'] = [CoreModule.forRoot(config), QueueModule];
    if (roles.api) imports.push(AuthModule, JobsModule, SchedulerModule, HealthModule);
    if (roles.worker) {
      if (!roles.runnerEntry) throw new Error('The worker role needs the job runner entry point');
      imports.push(WorkerModule.forRoot(roles.runnerEntry));
    }
    return { module: AppModule, imports };
  }
}
