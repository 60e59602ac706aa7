import type { JobEntity } from '../jobs/job.entity';
import type { JobsRepository } from '../jobs/jobs.repository';
import type { FairDispatcher } from './fair-dispatcher';
import type { ClaimRequest, JobQueue } from './job-queue';

/** The database is the queue: a worker claims the job the {@link FairDispatcher} chooses over every queued job. */
export class EmbeddedQueue implements JobQueue {
  readonly name = 'embedded' as const;

  constructor(
    private readonly jobs: JobsRepository,
    private readonly dispatcher: FairDispatcher,
  ) {}

  async enqueue(): Promise<void> {}

  async remove(): Promise<void> {}

  claimNext(request: ClaimRequest): Promise<JobEntity | null> {
    return this.dispatcher.claimNext(request);
  }

  async depth(): Promise<number> {
    return (await this.jobs.countByState()).queued ?? 0;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
