// src/scheduler owns which job runs next, the queues, the worker and its devices, job runner processes, leases and their reaper.
import { Module } from '@nestjs/common';
import { DevicePoolService } from './device-pool.service';

/** The process's device pool, shared by the worker role and serving (one instance for both). */
@Module({
  providers: [DevicePoolService],
  exports: [DevicePoolService],
})
export class DevicePoolModule {}
