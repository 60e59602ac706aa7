import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LocalBus } from '../core/local-bus';
import { findJobKind } from '../kinds/job-kinds';
import type { JobEntity } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import { JOB_QUEUE } from './job-queue';
import type { JobQueue } from './job-queue';
import { WorkersRepository } from './workers.repository';

/**
 * Finds jobs whose worker stopped renewing their lease (crashed, killed, partitioned) and ends them:
 * cancelled if a cancel was asked, re-queued if their kind can resume and attempts remain, failed with
 * the reason otherwise. Runs in every process; the conditional updates make concurrent reapers safe.
 */
@Injectable()
export class LeaseReaper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('LeaseReaper');
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly workers: WorkersRepository,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly bus: LocalBus,
  ) {}

  onApplicationBootstrap(): void {
    const everyMs = Math.max(250, (this.config.values.lease_seconds * 1000) / 3);
    this.timer = setInterval(() => void this.sweep(), everyMs);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** One pass; returns how many jobs it ended or re-queued. */
  async sweep(now = Date.now()): Promise<number> {
    if (this.busy) return 0;
    this.busy = true;
    let handled = 0;
    try {
      for (const job of await this.jobs.expiredLeases(now)) {
        if (await this.reap(job, now)) handled += 1;
      }
    } catch (error) {
      this.logger.warn(`Lease sweep failed: ${(error as Error).message}`);
    } finally {
      this.busy = false;
    }
    if (handled > 0) this.bus.jobQueued();
    return handled;
  }

  private async reap(job: JobEntity, now: number): Promise<boolean> {
    const worker = job.workerId ? await this.workers.find(job.workerId) : null;
    const seen = worker ? new Date(worker.lastSeenAt).toISOString() : 'never';
    const reason = `Worker ${job.workerId ?? '?'} stopped renewing the job's lease (last heartbeat ${seen}); its job runner was lost`;
    if (job.cancelRequestedAt) return this.jobs.abandon(job, 'cancelled', reason, now);
    const kind = findJobKind(job.kind);
    if (kind?.resumable && job.attempts < job.maxAttempts) {
      const requeued = await this.jobs.requeue(job, `${reason}; re-queued (attempt ${job.attempts + 1} of ${job.maxAttempts})`, {
        countAttempt: true,
        leaseExpiredBy: now,
      });
      if (requeued) await this.queue.enqueue(job);
      this.logger.warn(`Job ${job.id} re-queued: ${reason}`);
      return requeued;
    }
    const suffix = kind?.resumable ? ` after ${job.attempts} attempt(s)` : '';
    this.logger.warn(`Job ${job.id} failed: ${reason}`);
    return this.jobs.abandon(job, 'failed', reason + suffix, now);
  }
}
