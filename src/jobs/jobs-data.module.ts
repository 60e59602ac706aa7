// src/jobs owns the jobs table and its events, metrics, artifacts and secrets.
import { Module } from '@nestjs/common';
import { JobEventsRepository } from './job-events.repository';
import { JobsRepository } from './jobs.repository';

/** Job persistence, shared by the API (jobs, devices, health) and the worker. */
@Module({
  providers: [JobsRepository, JobEventsRepository],
  exports: [JobsRepository, JobEventsRepository],
})
export class JobsDataModule {}
