import { Logger } from '@nestjs/common';
import { Job, Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { JobEntity, JobResources } from '../jobs/job.entity';
import type { JobsRepository } from '../jobs/jobs.repository';
import type { ClaimRequest, JobQueue } from './job-queue';

export const BULLMQ_QUEUE_NAME = 'opentinker-jobs';

interface QueuedJobData {
  jobId: string;
  ownerId: string;
  resources: JobResources;
}

/** Jobs that did not fit go back for this long before another look. */
const RETRY_MS = 1_000;
/** Looks at most this many queue entries per claim attempt. */
const MAX_LOOKS = 20;

/** BullMQ priority: 1 is first. Ours: higher first, -100..100. */
export const bullPriority = (priority: number): number => 101 - priority;

/**
 * BullMQ on Redis carries queued jobs to workers on any machine, in priority order. A worker fetches
 * entries by hand (no processor function) only while it has free devices, claims the job in the
 * database, and completes the entry at once: running jobs are leased in the database, not held in
 * Redis, so both adapters share one lifecycle. An entry that does not fit this worker goes back as
 * delayed. If Redis loses entries, {@link reconcile} re-adds every queued job (adds are idempotent by id).
 */
export class BullmqQueue implements JobQueue {
  readonly name = 'bullmq' as const;
  private readonly logger = new Logger('BullmqQueue');
  private readonly connection: IORedis;
  private readonly queue: Queue<QueuedJobData>;
  private worker?: Worker<QueuedJobData>;
  private workerConnection?: IORedis;
  private readonly token = randomUUID();

  constructor(
    private readonly redisUrl: string,
    private readonly jobs: JobsRepository,
  ) {
    this.connection = new IORedis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
    this.connection.on('error', (e) => this.logger.warn(`Redis: ${e.message}`));
    this.queue = new Queue<QueuedJobData>(BULLMQ_QUEUE_NAME, { connection: this.connection });
  }

  async enqueue(job: JobEntity): Promise<void> {
    await this.queue.add(
      'job',
      { jobId: job.id, ownerId: job.ownerId, resources: job.resources },
      { jobId: job.id, priority: bullPriority(job.priority), removeOnComplete: true, removeOnFail: true },
    );
  }

  async remove(jobId: string): Promise<void> {
    // A worker may hold the entry's lock this instant; it then finds the row cancelled and drops it.
    await this.queue.remove(jobId).catch(() => 0);
  }

  async claimNext({ workerId, pool, userLimit }: ClaimRequest): Promise<JobEntity | null> {
    const worker = this.ensureWorker();
    for (let look = 0; look < MAX_LOOKS; look++) {
      const entry: Job<QueuedJobData> | undefined = await worker.getNextJob(this.token, { block: false });
      if (!entry) return null;
      const job = await this.jobs.findById(entry.data.jobId);
      if (!job || job.state !== 'queued') {
        await this.done(entry);
        continue;
      }
      if (!pool.canEverFit(job.resources)) {
        await entry.moveToDelayed(Date.now() + RETRY_MS, this.token);
        continue;
      }
      const devices = pool.choose(job.resources);
      if (!devices) {
        await entry.moveToDelayed(Date.now() + RETRY_MS / 4, this.token);
        return null;
      }
      const result = await this.jobs.claim(job, workerId, devices, userLimit);
      if (result === 'user_limit') {
        await entry.moveToDelayed(Date.now() + RETRY_MS, this.token);
        continue;
      }
      await this.done(entry);
      if (result === 'claimed') {
        pool.take(devices);
        return { ...job, state: 'starting', workerId, devices, attempts: job.attempts + 1 };
      }
    }
    return null;
  }

  /** Re-adds queued jobs missing from Redis (e.g. after Redis restarted empty). */
  async reconcile(): Promise<number> {
    let added = 0;
    for (const job of await this.jobs.queued(10_000)) {
      if (await this.queue.getJob(job.id)) continue;
      await this.enqueue(job);
      added += 1;
    }
    return added;
  }

  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('waiting', 'prioritized', 'delayed');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async ping(): Promise<void> {
    await this.connection.ping();
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await this.queue.close().catch(() => undefined);
    this.workerConnection?.disconnect();
    this.connection.disconnect();
  }

  private async done(entry: Job<QueuedJobData>): Promise<void> {
    await entry.moveToCompleted('taken', this.token, false);
  }

  private ensureWorker(): Worker<QueuedJobData> {
    if (!this.worker) {
      this.workerConnection = new IORedis(this.redisUrl, { maxRetriesPerRequest: null });
      this.workerConnection.on('error', (e) => this.logger.warn(`Redis (worker): ${e.message}`));
      this.worker = new Worker<QueuedJobData>(BULLMQ_QUEUE_NAME, null, {
        connection: this.workerConnection,
        autorun: false,
      });
    }
    return this.worker;
  }
}
