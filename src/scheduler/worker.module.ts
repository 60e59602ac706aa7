import { DynamicModule, Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { DevicePoolModule } from './device-pool.module';
import { QueueModule } from './queue.module';
import { JobSupervisor, RUNNER_ENTRY } from './job-supervisor.service';
import { WorkerService } from './worker.service';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { SessionRelayService } from '../sessions/session-relay.service';
import { UsersRepository } from '../auth/users.repository';

/** The worker role: present in `opentinker serve` (unless disabled) and in `opentinker worker`. */
@Module({})
export class WorkerModule {
  static forRoot(runnerEntry: string): DynamicModule {
    return {
      module: WorkerModule,
      imports: [JobsDataModule, QueueModule, DevicePoolModule],
      providers: [{ provide: RUNNER_ENTRY, useValue: runnerEntry }, JobSupervisor, WorkerService, SessionCallsRepository, SessionRelayService, UsersRepository],
      exports: [WorkerService],
    };
  }
}
