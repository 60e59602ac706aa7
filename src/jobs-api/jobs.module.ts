// src/jobs-api owns the jobs routes: submission and its checks, the list, one job, cancel, logs, metrics, artifacts, results, events, job kinds.
import { Module } from '@nestjs/common';
import { QueueModule } from '../scheduler/queue.module';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { JobKindsController } from './job-kinds.controller';
import { JobResultsController } from './job-results.controller';
import { JobResultsService } from './job-results.service';
import { JobsController } from './jobs.controller';
import { JobsService } from './jobs.service';
import { JobSpecChecksService } from './job-spec-checks.service';
import { JobStreamService } from './job-stream.service';

@Module({
  imports: [JobsDataModule, QueueModule],
  controllers: [JobsController, JobKindsController, JobResultsController],
  providers: [JobsService, JobStreamService, JobSpecChecksService, JobResultsService],
  exports: [JobsService],
})
export class JobsModule {}
