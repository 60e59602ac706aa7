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
/**
 * A worker holds an entry only between fetching it and settling it (one claim in the database), so the
 * lock is generous; an entry whose lock expired belongs to a consumer that died in between, and the
 * stalled check (every few seconds, one process at a time) puts it back in line.
 */
const LOCK_MS = 15_000;
const STALLED_CHECK_MS = 2_000;
/** An entry may be orphaned any number of times without being failed (which would drop it). */
const MAX_STALLED = 1_000_000;
/**
 * Calls made for the API (submit, cancel, health, reconcile) give up after this long instead of waiting
 * for Redis to come back: the connections queue commands while Redis is down (workers need that), which
 * would otherwise hang those requests. A command that gave up may still run once Redis is back; each is
 * idempotent. Worker-side calls wait, so a fetched entry is always settled.
 */
const ANSWER_MS = 5_000;
/** Entry states in which a queued job will still reach a worker. */
const LIVE_STATES = new Set(['waiting', 'prioritized', 'delayed', 'active', 'paused', 'waiting-children']);

/** BullMQ priority: 1 is first. Ours: higher first, -100..100. */
export const bullPriority = (priority: number): number => 101 - priority;

/**
 * BullMQ on Redis carries queued jobs to workers on any machine, in priority order. A worker fetches
 * entries by hand (no processor function) only while it has free devices, claims the job in the
 * database, and completes the entry at once: running jobs are leased in the database, not held in
 * Redis, so both adapters share one lifecycle. An entry that does not fit this worker goes back as
 * delayed. If Redis loses entries, {@link reconcile} re-adds every queued job (adds are idempotent by id);
 * if a consumer dies holding an entry, the stalled check returns the entry once its lock expires.
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
    this.queue.on('error', (e) => this.onError('queue', e));
  }

  async enqueue(job: JobEntity): Promise<void> {
    await this.answer(
      'add',
      this.queue.add(
        'job',
        { jobId: job.id, ownerId: job.ownerId, resources: job.resources },
        { jobId: job.id, priority: bullPriority(job.priority), removeOnComplete: true, removeOnFail: true },
      ),
    );
  }

  async remove(jobId: string): Promise<void> {
    // A worker may hold the entry's lock this instant; it then finds the row cancelled and drops it.
    await this.answer('remove', this.queue.remove(jobId)).catch(() => 0);
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
      // The database is the truth from here on: a failure to settle the entry must not lose the claim
      // (a leftover entry is dropped by whoever fetches it next, as its job is no longer queued).
      await this.done(entry).catch((e: Error) => this.logger.warn(`Job ${job.id}: could not settle its queue entry: ${e.message}`));
      if (result === 'claimed') {
        pool.take(devices);
        return { ...job, state: 'starting', workerId, devices, attempts: job.attempts + 1 };
      }
    }
    return null;
  }

  /**
   * Re-adds queued jobs missing from Redis (e.g. after Redis restarted empty). An entry that Redis still
   * holds but in no list (partial loss, eviction) would block a plain add, which is idempotent by id, so
   * it is removed first. Active entries are left to the stalled check.
   */
  async reconcile(): Promise<number> {
    let added = 0;
    for (const job of await this.jobs.queued(10_000)) {
      const state = await this.answer('getJobState', this.queue.getJobState(job.id));
      if (LIVE_STATES.has(state)) continue;
      if (await this.answer('getJob', this.queue.getJob(job.id))) await this.answer('remove', this.queue.remove(job.id));
      await this.enqueue(job);
      added += 1;
    }
    return added;
  }

  async depth(): Promise<number> {
    const counts = await this.answer('getJobCounts', this.queue.getJobCounts('waiting', 'prioritized', 'delayed'));
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async ping(): Promise<void> {
    await this.answer('ping', this.connection.ping());
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await this.queue.close().catch(() => undefined);
    this.workerConnection?.disconnect();
    this.connection.disconnect();
  }

  /** `work`, or an error once Redis has not answered for {@link ANSWER_MS}. */
  private async answer<T>(what: string, work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ANSWER_MS / 1000} s (${what}; connection ${this.connection.status})`)), ANSWER_MS);
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
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
        lockDuration: LOCK_MS,
        stalledInterval: STALLED_CHECK_MS,
        maxStalledCount: MAX_STALLED,
      });
      this.worker.on('error', (e) => this.onError('worker', e));
      // Without a processor BullMQ does not run the stalled check by itself (manual fetching).
      void this.worker.startStalledCheckTimer().catch((e: Error) => this.onError('worker', e));
    }
    return this.worker;
  }

  /** Connection trouble is already reported by the connections' own listeners. */
  private onError(source: string, error: Error): void {
    const code = (error as NodeJS.ErrnoException).code;
    const connection = /^E(CONN|TIMEDOUT|PIPE|NOTFOUND|HOSTUNREACH|AI_AGAIN)/.test(code ?? '') || /Connection is closed/i.test(error.message);
    if (connection) this.logger.debug(`BullMQ ${source}: ${error.message}`);
    else this.logger.warn(`BullMQ ${source}: ${error.message}`);
  }
}
