// src/scheduler owns which job runs next, the queues, the worker and its devices, job runner processes, leases and their reaper.
import { Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { DevicesController } from './devices.controller';
import { DevicesService } from './devices.service';
import { QueueModule } from './queue.module';

/** The API's view of the scheduler: workers and their devices. */
@Module({
  imports: [JobsDataModule, QueueModule],
  controllers: [DevicesController],
  providers: [DevicesService],
})
export class SchedulerModule {}
