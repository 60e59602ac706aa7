// src/checkpoints owns a job's checkpoints: listing, download as a tar, the folders job:<id>[/step-<n>] names.
import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs-api/jobs.module';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';

/** A job's checkpoints: listing and download. API role only; chat resolves `job:<id>[/step-<n>]` through {@link CheckpointsService}. */
@Module({
  imports: [JobsModule],
  controllers: [CheckpointsController],
  providers: [CheckpointsService],
  exports: [CheckpointsService],
})
export class CheckpointsModule {}
