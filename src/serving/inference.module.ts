import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs-api/jobs.module';
import { InferenceController } from '../jobs-api/job-results.controller';
import { InferenceResultsService } from '../jobs-api/job-results.service';

/** Results of inference jobs. API role only. */
@Module({
  imports: [JobsModule],
  controllers: [InferenceController],
  providers: [InferenceResultsService],
})
export class InferenceModule {}
