import { Logger } from '@nestjs/common';
import { JobType, Queue } from 'bullmq';
import IORedis from 'ioredis';
import type { JobEntity, JobResources } from '../jobs/job.entity';
import type { JobsRepository } from '../jobs/jobs.repository';
import type { FairDispatcher } from './fair-dispatcher';
import type { ClaimRequest, JobQueue } from './job-queue';

export const BULLMQ_QUEUE_NAME = 'opentinker-jobs';

interface QueuedJobData {
  jobId: string;
  ownerId: string;
  resources: JobResources;
}

/**
 * Calls made for the API (submit, cancel, health, reconcile) give up after this long instead of waiting
 * for Redis to come back: the connection queues commands while Redis is down, which would otherwise hang
 * those requests. A command that gave up may still run once Redis is back; each is idempotent.
 */
const ANSWER_MS = 5_000;
/** Entry states in which a queued job's entry is still in line. */
const LIVE_STATES = new Set(['waiting', 'prioritized', 'delayed', 'active', 'paused', 'waiting-children']);
/** Entries read from Redis at a time when the reconciler looks for stale ones. */
const PAGE = 500;

/** BullMQ priority: 1 is first. Ours: higher first, -100..100. */
export const bullPriority = (priority: number): number => 101 - priority;

/**
 * Distributed mode: every queued job has an entry in BullMQ on Redis (its depth, for workers and
 * dashboards on any machine), while the choice of the next job is the database's, as in embedded mode
 * (the {@link FairDispatcher}). BullMQ hands out entries by priority and age only (fair groups are a
 * BullMQ Pro feature), so taking entries in its order would be first come, first served across users; every
 * worker in distributed mode reaches the database anyway, to claim. A claimed job's entry is removed
 * (without waiting for Redis: a worker keeps dispatching while Redis is down). {@link reconcile} re-adds
 * the entries Redis lost and removes those whose job no longer waits.
 */
export class BullmqQueue implements JobQueue {
  readonly name = 'bullmq' as const;
  private readonly logger = new Logger('BullmqQueue');
  private readonly connection: IORedis;
  private readonly queue: Queue<QueuedJobData>;

  constructor(
    redisUrl: string,
    private readonly jobs: JobsRepository,
    private readonly dispatcher: FairDispatcher,
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
    // An entry locked by a consumer is left to the reconciler, which drops it once its job no longer waits.
    await this.answer('remove', this.queue.remove(jobId)).catch(() => 0);
  }

  async claimNext(request: ClaimRequest): Promise<JobEntity | null> {
    const job = await this.dispatcher.claimNext(request);
    // The database is the truth: an entry left behind is dropped by the reconciler.
    if (job) void this.queue.remove(job.id).catch((e: Error) => this.logger.warn(`Job ${job.id}: could not remove its queue entry: ${e.message}`));
    return job;
  }

  /**
   * Re-adds queued jobs missing from Redis (e.g. after Redis restarted empty), and removes entries whose
   * job no longer waits (claimed or cancelled while Redis was unreachable, or held by a consumer that
   * died). An entry that Redis still holds but in no list (partial loss, eviction) would block a plain
   * add, which is idempotent by id, so it is removed first. Returns how many entries it re-added.
   */
  async reconcile(): Promise<number> {
    let added = 0;
    for (const job of await this.jobs.queued(10_000)) {
      const state = await this.answer('getJobState', this.queue.getJobState(job.id));
      if (LIVE_STATES.has(state)) continue;
      if (await this.answer('getJob', this.queue.getJob(job.id))) await this.answer('remove', this.queue.remove(job.id));
      await this.enqueue(job);
      // A worker may have claimed the job (and removed its entry) between the read above and the add.
      if (!(await this.jobs.stillQueued([job.id])).has(job.id)) await this.remove(job.id);
      else added += 1;
    }
    const entries: string[] = [];
    for (const type of LIVE_STATES) {
      for (let start = 0; ; start += PAGE) {
        const ids = await this.answer('getRanges', this.queue.getRanges([type as JobType], start, start + PAGE - 1, true));
        entries.push(...ids);
        if (ids.length < PAGE) break;
      }
    }
    for (let i = 0; i < entries.length; i += PAGE) {
      const ids = entries.slice(i, i + PAGE);
      const waiting = await this.jobs.stillQueued(ids);
      for (const id of ids) if (!waiting.has(id)) await this.remove(id);
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
    await this.queue.close().catch(() => undefined);
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

  /** Connection trouble is already reported by the connections' own listeners. */
  private onError(source: string, error: Error): void {
    const code = (error as NodeJS.ErrnoException).code;
    const connection = /^E(CONN|TIMEDOUT|PIPE|NOTFOUND|HOSTUNREACH|AI_AGAIN)/.test(code ?? '') || /Connection is closed/i.test(error.message);
    if (connection) this.logger.debug(`BullMQ ${source}: ${error.message}`);
    else this.logger.warn(`BullMQ ${source}: ${error.message}`);
  }
}
