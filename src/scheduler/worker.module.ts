// src/scheduler owns which job runs next, the queues, the worker and its devices, job runner processes, leases and their reaper.
import { Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { DevicePoolModule } from './device-pool.module';
import { QueueModule } from './queue.module';
import { JobSupervisor } from './job-supervisor.service';
import { WorkerService } from './worker.service';
import { UsersRepository } from '../auth/users.repository';
import { StorageQuotaModule } from '../datasets/storage-quota.module';
import { HubAccessModule } from '../hub/hub-access.module';

/** The worker role: present in `opentinker serve` (unless disabled) and in `opentinker worker`. */
@Module({
  imports: [JobsDataModule, QueueModule, DevicePoolModule, HubAccessModule, StorageQuotaModule],
  providers: [JobSupervisor, WorkerService, UsersRepository],
  exports: [WorkerService],
})
export class WorkerModule {}
