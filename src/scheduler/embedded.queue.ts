import type { JobEntity } from '../jobs/job.entity';
import type { JobsRepository } from '../jobs/jobs.repository';
import type { ClaimRequest, JobQueue } from './job-queue';

const SCAN = 200;

/**
 * The database is the queue. A worker scans queued jobs in dispatch order (priority, then age) and
 * claims the first it may run. It stops at the first job that would fit once devices free up rather
 * than letting smaller jobs overtake it (FIFO; no starvation of big jobs); it skips jobs it can never
 * fit (another worker may) and jobs whose owner is at the per-user limit (fairness).
 */
export class EmbeddedQueue implements JobQueue {
  readonly name = 'embedded' as const;

  constructor(private readonly jobs: JobsRepository) {}

  async enqueue(): Promise<void> {}

  async remove(): Promise<void> {}

  async claimNext({ workerId, pool, userLimit }: ClaimRequest): Promise<JobEntity | null> {
    for (const job of await this.jobs.queued(SCAN)) {
      if (!pool.canEverFit(job.resources)) continue;
      const devices = pool.choose(job.resources);
      if (!devices) return null;
      const result = await this.jobs.claim(job, workerId, devices, userLimit);
      if (result === 'claimed') {
        pool.take(devices);
        return { ...job, state: 'starting', workerId, devices, attempts: job.attempts + 1 };
      }
    }
    return null;
  }

  async depth(): Promise<number> {
    return (await this.jobs.countByState()).queued ?? 0;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
