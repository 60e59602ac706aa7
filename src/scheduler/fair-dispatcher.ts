import type { JobEntity } from '../jobs/job.entity';
import type { JobsRepository, QueuedJob } from '../jobs/jobs.repository';
import { fairOrder } from './fair-share';
import type { ClaimRequest } from './job-queue';

/** How far into one user's queue a worker looks for a job it could ever hold, when the user's first job needs a bigger worker. */
export const USER_LOOKAHEAD = 32;
/** Fresh looks per claim when another worker took the chosen job first (or its user reached the limit meanwhile). */
const ATTEMPTS = 3;

/**
 * Chooses and claims the next job for a worker, over the whole queue, for both queue adapters.
 *
 * Each look reads every user's first queued job ({@link JobsRepository.queueHeads}) and what each user's
 * running jobs hold ({@link JobsRepository.usageByOwner}), orders users by {@link fairOrder}, and takes the
 * first user's job that this worker could ever hold (their first one, else the first of their next
 * {@link USER_LOOKAHEAD} that fits a worker of this size). That job is never overtaken here: if its
 * devices are not free, idle model servers holding them are evicted ({@link DevicePool.makeRoom}), and
 * otherwise the worker takes nothing until they free up. The claim itself is the repository's
 * conditional update, so a job never runs twice.
 *
 * The cost of a look grows with the number of users with queued jobs (accounts are made by admins) and
 * with the running jobs, not with the number of queued jobs.
 */
export class FairDispatcher {
  constructor(private readonly jobs: JobsRepository) {}

  async claimNext({ workerId, pool, userLimit }: ClaimRequest): Promise<JobEntity | null> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const job = await this.choose(pool, userLimit);
      if (!job) return null;
      let devices = pool.choose(job.resources);
      try {
        if (!devices && (await pool.makeRoom(job.resources))) devices = pool.choose(job.resources);
        if (!devices) return null;
        const result = await this.jobs.claim(job, workerId, devices, userLimit);
        if (result !== 'claimed') continue;
        pool.take(devices);
      } finally {
        pool.unreserve();
      }
      const claimed = await this.jobs.findById(job.id);
      if (!claimed) pool.release(devices);
      return claimed;
    }
    return null;
  }

  /** The job this worker should run next, by fair share, or null when no user has one it could ever hold. */
  private async choose(pool: ClaimRequest['pool'], userLimit: number): Promise<QueuedJob | null> {
    const [heads, usage] = await Promise.all([this.jobs.queueHeads(), this.jobs.usageByOwner()]);
    for (const head of fairOrder(heads, usage, userLimit)) {
      if (pool.canEverFit(head.resources)) return head;
      const fitting = (await this.jobs.queuedOf(head.ownerId, USER_LOOKAHEAD)).find((job) => pool.canEverFit(job.resources));
      if (fitting) return fitting;
    }
    return null;
  }
}
