import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, FindOptionsWhere, In, IsNull, LessThan, Not, Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { JobEventEntity } from './job-event.entity';
import { ACTIVE_STATES, DeviceIds, FINAL_STATES, JOB_STATES, JobEntity, JobResources, JobState, JobSummary, NEXT_VERSION } from './job.entity';
import { JobSecretEntity } from './job-secret.entity';
import { secretsCipher } from './job-secrets-cipher';

export interface JobListQuery {
  ownerId?: string;
  states?: JobState[];
  kind?: string;
  limit: number;
  offset: number;
}

/** A user's jobs of one name, newest first (serving resolves model names with it). */
export interface JobRef {
  id: string;
  name: string | null;
  kind: string;
  createdAt: number;
}

/** The columns a listing reads (spec, resume state and lease are left out), named as the entity's properties. */
const SUMMARY_SELECT = [
  ['id', 'id'],
  ['owner_id', 'ownerId'],
  ['kind', 'kind'],
  ['name', 'name'],
  ['state', 'state'],
  ['priority', 'priority'],
  ['environment_id', 'environmentId'],
  ['resources', 'resources'],
  ['devices', 'devices'],
  ['worker_id', 'workerId'],
  ['attempts', 'attempts'],
  ['max_attempts', 'maxAttempts'],
  ['error', 'error'],
  ['exit_code', 'exitCode'],
  ['progress', 'progress'],
  ['cancel_requested_at', 'cancelRequestedAt'],
  ['created_at', 'createdAt'],
  ['started_at', 'startedAt'],
  ['finished_at', 'finishedAt'],
  ['updated_at', 'updatedAt'],
  ['version', 'version'],
]
  .map(([column, property]) => `"${column}" AS "${property}"`)
  .join(', ');

/** `simple-json` columns arrive as text; PostgreSQL's driver returns BIGINT as strings. */
const json = <T>(v: unknown): T => (v === null ? null : JSON.parse(v as string)) as T;
const num = <T extends number | null>(v: unknown): T => (v === null ? null : Number(v)) as T;

/** A row of {@link SUMMARY_SELECT}, converted as the entity's columns are. */
function summaryOf(r: Record<string, unknown>): JobSummary {
  return {
    id: r.id as string,
    ownerId: r.ownerId as string,
    kind: r.kind as string,
    name: r.name as string | null,
    state: r.state as JobState,
    priority: num(r.priority),
    environmentId: r.environmentId as string | null,
    resources: json(r.resources),
    devices: json(r.devices),
    workerId: r.workerId as string | null,
    attempts: num(r.attempts),
    maxAttempts: num(r.maxAttempts),
    error: r.error as string | null,
    exitCode: num(r.exitCode),
    progress: json(r.progress),
    cancelRequestedAt: num(r.cancelRequestedAt),
    createdAt: num(r.createdAt),
    startedAt: num(r.startedAt),
    finishedAt: num(r.finishedAt),
    updatedAt: num(r.updatedAt),
    version: num(r.version),
  };
}

export type ClaimResult = 'claimed' | 'user_limit' | 'gone';

/** A queued job as dispatch sees it (no spec): enough to order, place and claim it. */
export interface QueuedJob {
  id: string;
  ownerId: string;
  adminPriority: number;
  priority: number;
  resources: JobResources;
  createdAt: number;
}

/** A user's first queued job, and when that user's last job started (null: never). */
export interface QueueHead extends QueuedJob {
  ownerLastStartedAt: number | null;
}

/** What one user's starting and running jobs hold. */
export interface OwnerUsage {
  jobs: number;
  gpus: number;
  cpuSlots: number;
}

class UserLimitReached extends Error {}
class QueuedLimitReached extends Error {}

/** The columns of a {@link QueuedJob}, and the order a user's own queued jobs start in (`idx_jobs_dispatch`). */
const QUEUED_SELECT =
  '"jobs"."id", "jobs"."owner_id" AS "ownerId", "jobs"."admin_priority" AS "adminPriority", "jobs"."priority", "jobs"."resources", "jobs"."created_at" AS "createdAt"';
const OWN_ORDER = 'ORDER BY "admin_priority" DESC, "priority" DESC, "created_at" ASC, "id" ASC';

function queuedJobOf(r: Record<string, unknown>): QueuedJob {
  return {
    id: r.id as string,
    ownerId: r.ownerId as string,
    adminPriority: num(r.adminPriority),
    priority: num(r.priority),
    resources: json(r.resources),
    createdAt: num(r.createdAt),
  };
}

/**
 * Job rows and their state transitions. Every transition is a conditional UPDATE on the state the caller
 * expects, so two processes racing on one job (a worker finishing it, a reaper expiring its lease, a user
 * cancelling it) cannot both win. Each transition records a `state` event in the same transaction.
 * Every UPDATE here also raises the row's `version` ({@link NEXT_VERSION}).
 */
@Injectable()
export class JobsRepository {
  private readonly jobs: Repository<JobEntity>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {
    this.jobs = dataSource.getRepository(JobEntity);
  }

  /**
   * A new job, with the secrets taken out of its spec (see {@link JobSecretEntity}) encrypted with the
   * server's key (`secretsCipher`), in one transaction.
   * With `maxQueued`, refused (`'queued_limit'`, nothing written) when its owner would then have more
   * queued jobs than that: the row is written first so SQLite holds its write lock while counting, and on
   * PostgreSQL the owner's advisory lock (the one claims take) serialises one user's submissions.
   */
  async insert(job: JobEntity, secrets: Record<string, string> = {}, maxQueued?: number): Promise<'inserted' | 'queued_limit'> {
    const cipher = Object.keys(secrets).length > 0 ? secretsCipher(this.config) : null;
    try {
      await this.dataSource.transaction(async (m) => {
        if (maxQueued !== undefined && this.config.usesPostgres) await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [job.ownerId]);
        await m.insert(JobEntity, job as never);
        if (maxQueued !== undefined && (await this.countQueuedOf(m, job.ownerId, maxQueued + 1)) > maxQueued) throw new QueuedLimitReached();
        const rows = Object.entries(secrets).map(([path, value]) => ({ jobId: job.id, path, value: cipher!.seal(job.id, path, value) }));
        if (rows.length > 0) await m.insert(JobSecretEntity, rows);
        await this.stateEvent(m, job.id, 'queued', null, job.createdAt);
      });
      return 'inserted';
    } catch (error) {
      if (error instanceof QueuedLimitReached) return 'queued_limit';
      throw error;
    }
  }

  /** The owner's queued jobs, counted up to `upTo` (reads at most that many index entries). */
  private async countQueuedOf(m: EntityManager, ownerId: string, upTo: number): Promise<number> {
    const p = this.placeholders();
    const rows: { n: unknown }[] = await m.query(
      `SELECT COUNT(*) AS "n" FROM (SELECT 1 FROM ${this.queuedJobs} WHERE "state" = 'queued' AND "owner_id" = ${p(1)} LIMIT ${p(2)}) AS "q"`,
      [ownerId, upTo],
    );
    return Number(rows[0].n);
  }

  /**
   * A job's secrets by dotted spec path, decrypted, for its runner. Throws `SecretsKeyError` (naming
   * the setting secrets_key) when this machine's key is not the one that sealed them. A job's secrets
   * are deleted when it ends ({@link transition}).
   */
  async secretsOf(jobId: string): Promise<Record<string, string>> {
    const rows = await this.dataSource.getRepository(JobSecretEntity).findBy({ jobId });
    if (rows.length === 0) return {};
    const cipher = secretsCipher(this.config);
    return Object.fromEntries(rows.map((r) => [r.path, cipher.open(jobId, r.path, r.value)]));
  }

  findById(id: string): Promise<JobEntity | null> {
    return this.jobs.findOneBy({ id });
  }

  /**
   * One page of the list, newest first, as job ids and versions, and the total: the list writes each job
   * from the JSON it keeps by (id, version) and reads in full only the jobs it lacks ({@link summaries}).
   * One statement (the count is a scalar subquery: one round trip on PostgreSQL) through TypeORM's
   * `query`; three values a row rather than twenty-one, because better-sqlite3 building row objects was
   * most of a page's cost. The order is the `idx_jobs_created` / `idx_jobs_owner` index order.
   */
  async page(q: JobListQuery): Promise<{ rows: { id: string; version: number }[]; total: number }> {
    const params: unknown[] = [];
    const postgres = this.config.usesPostgres;
    const p = (v: unknown): string => (params.push(v), postgres ? `$${params.length}` : '?');
    // Written twice (count and page) so each has its own placeholders; repeated states are dropped.
    const filter = (): string => {
      const where: string[] = [];
      if (q.ownerId) where.push(`"owner_id" = ${p(q.ownerId)}`);
      const states = [...new Set(q.states ?? [])];
      if (states.length) where.push(`"state" IN (${states.map(p).join(', ')})`);
      if (q.kind) where.push(`"kind" = ${p(q.kind)}`);
      return where.length ? ` WHERE ${where.join(' AND ')}` : '';
    };
    const count = `SELECT COUNT(*) AS "total" FROM "jobs"${filter()}`;
    const countParams = params.slice();
    const rows: { id: string; version: number; total: unknown }[] = await this.dataSource.query(
      `SELECT "id", "version", (${count}) AS "total" FROM "jobs"${filter()} ORDER BY "created_at" DESC, "id" DESC LIMIT ${p(q.limit)} OFFSET ${p(q.offset)}`,
      params,
    );
    // A page past the end has no row to carry the total.
    const total = rows.length ? rows[0].total : q.offset === 0 ? 0 : (await this.dataSource.query(count, countParams))[0].total;
    return { rows, total: Number(total) };
  }

  /** These jobs' summaries (spec, resume state and lease left out), in no particular order. */
  async summaries(ids: string[]): Promise<JobSummary[]> {
    if (ids.length === 0) return [];
    const marks = ids.map((_, i) => (this.config.usesPostgres ? `$${i + 1}` : '?')).join(', ');
    const rows: Record<string, unknown>[] = await this.dataSource.query(`SELECT ${SUMMARY_SELECT} FROM "jobs" WHERE "id" IN (${marks})`, ids);
    return rows.map(summaryOf);
  }

  /** The owner's jobs with this name, newest first (at most `limit`). */
  byName(ownerId: string, name: string, limit = 10): Promise<JobRef[]> {
    return this.jobs.find({ select: { id: true, name: true, kind: true, createdAt: true }, where: { ownerId, name }, order: { createdAt: 'DESC' }, take: limit });
  }

  /** The owner's newest jobs. */
  recent(ownerId: string, limit: number): Promise<JobRef[]> {
    return this.jobs.find({ select: { id: true, name: true, kind: true, createdAt: true }, where: { ownerId }, order: { createdAt: 'DESC', id: 'DESC' }, take: limit });
  }

  /**
   * Ids of unfinished jobs (queued, starting, running) whose spec names the dataset. The spec is stored
   * as JSON text, so a LIKE on the uuid narrows the rows; parsing confirms it is one of the dataset keys.
   */
  async unfinishedUsingDataset(datasetId: string): Promise<string[]> {
    return (await this.unfinishedMentioning(datasetId)).filter((job) => namesDataset(job.spec, datasetId)).map((job) => job.id);
  }

  /** Unfinished jobs whose `model.path` is `name` (an uploaded model, `model:<id>`). */
  async unfinishedUsingModel(name: string): Promise<string[]> {
    return (await this.unfinishedMentioning(name)).filter((job) => (job.spec.model as { path?: unknown } | undefined)?.path === name).map((job) => job.id);
  }

  /** Unfinished jobs whose stored spec contains `needle` somewhere (the caller checks where). */
  private unfinishedMentioning(needle: string): Promise<Pick<JobEntity, 'id' | 'spec'>[]> {
    return this.jobs
      .createQueryBuilder('j')
      .select(['j.id', 'j.spec'])
      .where({ state: In(JOB_STATES.filter((s) => !FINAL_STATES.includes(s))) })
      .andWhere('j.spec LIKE :needle', { needle: `%${needle}%` })
      .getMany();
  }

  async countByState(): Promise<Record<string, number>> {
    const rows: { state: string; n: string | number }[] = await this.jobs
      .createQueryBuilder('j')
      .select('j.state', 'state')
      .addSelect('COUNT(*)', 'n')
      .groupBy('j.state')
      .getRawMany();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /** Jobs starting or running, with what the Prometheus gauges show of them (no spec read). */
  active(): Promise<Pick<JobEntity, 'id' | 'kind' | 'progress'>[]> {
    return this.jobs.find({ select: { id: true, kind: true, progress: true }, where: { state: In([...ACTIVE_STATES]) } });
  }

  /** Queued jobs, the oldest first (the BullMQ reconciler compares them with Redis). */
  queued(limit: number): Promise<JobEntity[]> {
    return this.jobs.find({ where: { state: 'queued' }, order: { createdAt: 'ASC', id: 'ASC' }, take: limit });
  }

  /**
   * Each user's first queued job in the order their own jobs start (admin priority, priority, age; see
   * `idx_jobs_dispatch`), one per user with queued jobs, with when that user's last job started. One
   * statement: a skip scan over the index finds the next owner after the last one (a seek each), one seek
   * finds that owner's first job and one (`idx_jobs_owner_started`) their last start, so the cost grows
   * with the number of users with queued jobs, not with how many jobs each has queued or has run.
   */
  async queueHeads(): Promise<QueueHead[]> {
    const rows: Record<string, unknown>[] = await this.dataSource.query(
      `WITH RECURSIVE "owners" ("owner_id") AS (
        SELECT (SELECT "owner_id" FROM ${this.queuedJobs} WHERE "state" = 'queued' ORDER BY "owner_id" LIMIT 1)
        UNION ALL
        SELECT (SELECT "owner_id" FROM ${this.queuedJobs} WHERE "state" = 'queued' AND "owner_id" > "o"."owner_id" ORDER BY "owner_id" LIMIT 1)
        FROM "owners" "o" WHERE "o"."owner_id" IS NOT NULL
      )
      SELECT ${QUEUED_SELECT},
        (SELECT "started_at" FROM "jobs" WHERE "owner_id" = "o"."owner_id" AND "started_at" IS NOT NULL ORDER BY "started_at" DESC LIMIT 1) AS "ownerLastStartedAt"
      FROM "owners" "o" JOIN "jobs" ON "jobs"."id" = (
        SELECT "id" FROM ${this.queuedJobs} WHERE "state" = 'queued' AND "owner_id" = "o"."owner_id" ${OWN_ORDER} LIMIT 1
      )`,
    );
    return rows.map((r) => ({ ...queuedJobOf(r), ownerLastStartedAt: num(r.ownerLastStartedAt) }));
  }

  /** Which of these jobs are still queued. */
  async stillQueued(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.jobs.find({ select: { id: true }, where: { id: In(ids), state: 'queued' } });
    return new Set(rows.map((r) => r.id));
  }

  /** One user's first `limit` queued jobs, in the order they start. */
  async queuedOf(ownerId: string, limit: number): Promise<QueuedJob[]> {
    const p = this.placeholders();
    const rows: Record<string, unknown>[] = await this.dataSource.query(
      `SELECT ${QUEUED_SELECT} FROM ${this.queuedJobs} WHERE "state" = 'queued' AND "owner_id" = ${p(1)} ${OWN_ORDER} LIMIT ${p(2)}`,
      [ownerId, limit],
    );
    return rows.map(queuedJobOf);
  }

  /** What each user's starting and running jobs hold (read from those jobs only: as many as the devices they hold). */
  async usageByOwner(): Promise<Map<string, OwnerUsage>> {
    const rows = await this.jobs.find({ select: { ownerId: true, resources: true }, where: { state: In([...ACTIVE_STATES]) } });
    const usage = new Map<string, OwnerUsage>();
    for (const { ownerId, resources } of rows) {
      const u = usage.get(ownerId) ?? { jobs: 0, gpus: 0, cpuSlots: 0 };
      u.jobs += 1;
      u.gpus += resources.gpus;
      u.cpuSlots += resources.cpu_slots;
      usage.set(ownerId, u);
    }
    return usage;
  }

  /**
   * Gives a queued job to a worker unless its owner already has `userLimit` jobs starting or running.
   * The claim is written first so SQLite takes its write lock before counting; on PostgreSQL an advisory
   * lock per owner serialises concurrent claims for one user across workers.
   */
  async claim(job: Pick<JobEntity, 'id' | 'ownerId'>, workerId: string, devices: DeviceIds, userLimit: number): Promise<ClaimResult> {
    const now = Date.now();
    try {
      return await this.dataSource.transaction(async (m) => {
        if (this.config.usesPostgres) await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [job.ownerId]);
        const result = await m.update(
          JobEntity,
          { id: job.id, state: 'queued' },
          {
            state: 'starting',
            workerId,
            devices,
            attempts: () => 'attempts + 1',
            leaseExpiresAt: now + this.config.values.lease_seconds * 1000,
            updatedAt: now,
            ...NEXT_VERSION,
          },
        );
        if (result.affected !== 1) return 'gone';
        const active = await m.count(JobEntity, { where: { ownerId: job.ownerId, state: In([...ACTIVE_STATES]) } });
        if (active > userLimit) throw new UserLimitReached();
        await this.stateEvent(m, job.id, 'starting', { worker_id: workerId, devices }, now);
        return 'claimed';
      });
    } catch (error) {
      if (error instanceof UserLimitReached) return 'user_limit';
      throw error;
    }
  }

  async markRunning(id: string, workerId: string): Promise<boolean> {
    const now = Date.now();
    return this.transition({ id, state: 'starting', workerId }, { state: 'running', startedAt: now }, 'running', null, now);
  }

  /** Final state reported by the worker that holds the job. */
  async finish(id: string, workerId: string, state: 'succeeded' | 'failed' | 'cancelled', outcome: { error?: string | null; exitCode?: number | null } = {}): Promise<boolean> {
    const now = Date.now();
    return this.transition(
      { id, state: In([...ACTIVE_STATES]), workerId },
      { state, finishedAt: now, error: outcome.error ?? null, exitCode: outcome.exitCode ?? null, leaseExpiresAt: null },
      state,
      outcome.error ? { error: outcome.error } : null,
      now,
    );
  }

  /**
   * Puts an active job back in the queue (its worker was lost or shut down and the kind can resume).
   * With `leaseExpiredBy`, only while the lease is still expired: a worker that renewed it in the
   * meantime keeps its job.
   */
  async requeue(job: JobEntity, reason: string, opts: { countAttempt: boolean; leaseExpiredBy?: number }): Promise<boolean> {
    const now = Date.now();
    return this.transition(
      this.heldBy(job, opts.leaseExpiredBy),
      {
        state: 'queued',
        workerId: null,
        devices: null,
        leaseExpiresAt: null,
        attempts: opts.countAttempt ? job.attempts : Math.max(0, job.attempts - 1),
      },
      'queued',
      { reason },
      now,
    );
  }

  /** Ends an active job that lost its worker (same guard as {@link requeue}). */
  async abandon(job: JobEntity, state: 'failed' | 'cancelled', reason: string, leaseExpiredBy?: number): Promise<boolean> {
    const now = Date.now();
    return this.transition(this.heldBy(job, leaseExpiredBy), { state, error: state === 'failed' ? reason : null, finishedAt: now, leaseExpiresAt: null }, state, { reason }, now);
  }

  async cancelQueued(id: string): Promise<boolean> {
    const now = Date.now();
    return this.transition({ id, state: 'queued' }, { state: 'cancelled', finishedAt: now }, 'cancelled', null, now);
  }

  async requestCancel(id: string): Promise<boolean> {
    const now = Date.now();
    const result = await this.jobs.update({ id, state: In([...ACTIVE_STATES]), cancelRequestedAt: IsNull() }, { cancelRequestedAt: now, updatedAt: now, ...NEXT_VERSION });
    return result.affected === 1;
  }

  /** Renews the leases of the jobs a worker is running, and returns those whose cancellation was asked. */
  async renewLeases(workerId: string, ids: string[]): Promise<{ cancel: string[]; lost: string[] }> {
    if (ids.length === 0) return { cancel: [], lost: [] };
    const until = Date.now() + this.config.values.lease_seconds * 1000;
    await this.jobs.update({ id: In(ids), workerId, state: In([...ACTIVE_STATES]) }, { leaseExpiresAt: until, ...NEXT_VERSION });
    const rows = await this.jobs.find({ select: { id: true, state: true, workerId: true, cancelRequestedAt: true }, where: { id: In(ids) } });
    const held = new Map(rows.map((r) => [r.id, r]));
    const cancel: string[] = [];
    const lost: string[] = [];
    for (const id of ids) {
      const row = held.get(id);
      if (!row || row.workerId !== workerId || !ACTIVE_STATES.includes(row.state)) lost.push(id);
      else if (row.cancelRequestedAt !== null) cancel.push(id);
    }
    return { cancel, lost };
  }

  expiredLeases(now = Date.now()): Promise<JobEntity[]> {
    return this.jobs.find({ where: { state: In([...ACTIVE_STATES]), leaseExpiresAt: LessThan(now) }, take: 100 });
  }

  /** Active jobs recorded against a worker id, e.g. a restarted worker reusing its configured id. */
  activeOnWorker(workerId: string): Promise<JobEntity[]> {
    return this.jobs.find({ where: { workerId, state: In([...ACTIVE_STATES]) } });
  }

  /** Ids of one owner's jobs of these kinds (for the storage their folders use). */
  async idsOf(ownerId: string, kinds: readonly string[]): Promise<string[]> {
    const rows = await this.jobs.find({ select: { id: true }, where: { ownerId, kind: In([...kinds]) } });
    return rows.map((r) => r.id);
  }

  activeWithDevices(): Promise<Pick<JobEntity, 'id' | 'workerId' | 'devices' | 'ownerId'>[]> {
    return this.jobs.find({
      select: { id: true, workerId: true, devices: true, ownerId: true },
      where: { state: In([...ACTIVE_STATES]), workerId: Not(IsNull()) },
    });
  }

  async saveResumeState(id: string, workerId: string, resumeState: unknown): Promise<void> {
    await this.jobs.update({ id, workerId }, { resumeState: resumeState as object, ...NEXT_VERSION });
  }

  /**
   * The jobs table, read through `idx_jobs_dispatch` (queued jobs only). PostgreSQL's planner takes the
   * partial index by itself; SQLite's, without statistics (nothing runs `ANALYZE`), would rather read
   * `idx_jobs_queue` and sort every queued row, so it is named there.
   */
  private get queuedJobs(): string {
    return this.config.usesPostgres ? '"jobs"' : '"jobs" INDEXED BY "idx_jobs_dispatch"';
  }

  /** `$n` on PostgreSQL, `?` on SQLite. */
  private placeholders(): (n: number) => string {
    return this.config.usesPostgres ? (n) => `$${n}` : () => '?';
  }

  private heldBy(job: JobEntity, leaseExpiredBy?: number): FindOptionsWhere<JobEntity> {
    const where: FindOptionsWhere<JobEntity> = { id: job.id, state: In([...ACTIVE_STATES]), workerId: job.workerId ?? IsNull() };
    if (leaseExpiredBy !== undefined) where.leaseExpiresAt = LessThan(leaseExpiredBy);
    return where;
  }

  private async transition(where: FindOptionsWhere<JobEntity>, set: Partial<JobEntity>, state: JobState, detail: Record<string, unknown> | null, now: number): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const result = await m.update(JobEntity, where, { ...set, updatedAt: now, ...NEXT_VERSION } as never);
      if (result.affected !== 1) return false;
      // An ended job never runs again: its secrets go with it. A re-queued one keeps them for its next run.
      if (FINAL_STATES.includes(state)) await m.delete(JobSecretEntity, { jobId: where.id as string });
      await this.stateEvent(m, where.id as string, state, detail, now);
      return true;
    });
  }

  private async stateEvent(m: EntityManager, jobId: string, state: JobState, detail: unknown, now: number): Promise<void> {
    const data = { state, ...(detail && typeof detail === 'object' ? detail : {}) };
    await m.insert(JobEventEntity, { jobId, type: 'state', data, createdAt: now });
  }
}

/** Whether the spec reads the dataset: as the train set (`environment.dataset`) or the validation set. */
function namesDataset(spec: Record<string, unknown>, datasetId: string): boolean {
  const env = spec.environment as { dataset?: unknown; val_dataset?: unknown } | undefined;
  return env?.dataset === datasetId || env?.val_dataset === datasetId;
}
