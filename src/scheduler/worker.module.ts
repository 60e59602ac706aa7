import { Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { QueueModule } from './queue.module';
import { JobSupervisor } from './job-supervisor.service';
import { WorkerService } from './worker.service';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { SessionRelayService } from '../sessions/session-relay.service';
import { UsersRepository } from '../auth/users.repository';

/** The worker role: present in `opentinker serve` (unless disabled) and in `opentinker worker`. */
@Module({
  imports: [JobsDataModule, QueueModule],
  providers: [JobSupervisor, WorkerService, SessionCallsRepository, SessionRelayService, UsersRepository],
  exports: [WorkerService],
})
export class WorkerModule {}
