import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { createReadStream, existsSync, ReadStream } from 'node:fs';
import { isAdmin, Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { LocalBus } from '../core/local-bus';
import { AppConfig } from '../config/app-config';
import { JOB_QUEUE } from '../scheduler/job-queue';
import type { JobQueue } from '../scheduler/job-queue';
import { JobArtifactEntity } from '../jobs/job-artifact.entity';
import { JobEventsRepository } from '../jobs/job-events.repository';
import { JobSpecChecksService } from './job-spec-checks.service';
import { JobMetricEntity } from '../jobs/job-metric.entity';
import { takeSecrets } from '../jobs/job-secrets';
import { FINAL_STATES, JobEntity, JobState } from '../jobs/job.entity';
import { JobSummaryCache } from './job-summary.cache';
import { JobRef, JobsRepository } from '../jobs/jobs.repository';
import { parsedSpec } from '../kinds/job-kinds';
import type { ParsedJobSpec } from '../kinds/job-kinds';

@Injectable()
export class JobsService {
  private readonly logger = new Logger('Jobs');

  constructor(
    private readonly jobs: JobsRepository,
    private readonly events: JobEventsRepository,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly bus: LocalBus,
    private readonly checks: JobSpecChecksService,
    private readonly config: AppConfig,
  ) {}

  private readonly summaryJson = new JobSummaryCache();

  /**
   * Stores and queues a spec that `JobSpecBody` has parsed, once the checks that need the database or the
   * registry pass. A plain user with `max_queued_jobs_per_user` queued jobs is refused (429); admins are
   * exempt. A priority above `max_user_priority` (which only an admin may give) also counts across users.
   */
  async submit(caller: Principal, body: ParsedJobSpec['spec']): Promise<JobEntity> {
    const { kind, spec: parsed } = parsedSpec(body);
    await this.checks.check(parsed, (id) => this.get(caller, id), caller);
    const { spec, secrets } = takeSecrets(parsed);
    const now = Date.now();
    const priority = spec.priority as number;
    const job = Object.assign(new JobEntity(), {
      id: randomUUID(),
      ownerId: caller.userId,
      kind: kind.kind,
      name: spec.name ?? null,
      state: 'queued' as JobState,
      priority,
      adminPriority: isAdmin(caller) && priority > this.config.values.max_user_priority ? priority : 0,
      environmentId: environmentIdOf(spec),
      spec,
      resources: spec.resources,
      devices: null,
      workerId: null,
      attempts: 0,
      maxAttempts: spec.max_attempts,
      error: null,
      exitCode: null,
      progress: null,
      resumeState: null,
      cancelRequestedAt: null,
      leaseExpiresAt: null,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
      version: 0,
    });
    const maxQueued = this.config.values.max_queued_jobs_per_user;
    if ((await this.jobs.insert(job, secrets, isAdmin(caller) ? undefined : maxQueued)) === 'queued_limit') {
      throw new AppError(
        ErrorCode.QUEUED_JOBS_LIMIT,
        `You have ${maxQueued} queued jobs, the most this server allows one user (operator setting max_queued_jobs_per_user); wait until some start, or cancel some`,
        { details: { setting: 'max_queued_jobs_per_user', limit: maxQueued }, retryAfter: 10 },
      );
    }
    try {
      await this.queue.enqueue(job);
    } catch (error) {
      // The row is committed, so the job is not lost: the queue's reconciler re-adds it.
      this.logger.warn(`Job ${job.id} is queued in the database but not yet in the ${this.queue.name} queue: ${(error as Error).message}`);
    }
    this.bus.jobQueued();
    return job;
  }

  /** One page of the caller's jobs (every job for an admin), newest first, each as its JSON, and how many match. */
  async list(caller: Principal, q: { page: number; limit: number; state?: JobState[]; kind?: string }): Promise<{ items: string[]; total: number }> {
    const ownerId = isAdmin(caller) ? undefined : caller.userId;
    const { rows, total } = await this.jobs.page({ ownerId, states: q.state, kind: q.kind, limit: q.limit, offset: (q.page - 1) * q.limit });
    return { items: await this.summaryJson.items(rows, (ids) => this.jobs.summaries(ids)), total };
  }

  /** The caller's own jobs with this name, newest first (an admin's too: names are per owner). */
  named(caller: Principal, name: string, limit: number): Promise<JobRef[]> {
    return this.jobs.byName(caller.userId, name, limit);
  }

  /** The caller's own newest jobs. */
  recent(caller: Principal, limit: number): Promise<JobRef[]> {
    return this.jobs.recent(caller.userId, limit);
  }

  /** A job the caller may see. Someone else's job is "not found", so ids cannot be probed. */
  async get(caller: Principal, id: string): Promise<JobEntity> {
    const job = await this.jobs.findById(id);
    if (!job || (job.ownerId !== caller.userId && !isAdmin(caller))) throw AppError.notFound('Job', id);
    return job;
  }

  /** Cancels a queued job at once, or asks the worker to stop a running one. Idempotent while active. */
  async cancel(caller: Principal, id: string): Promise<JobEntity> {
    const job = await this.get(caller, id);
    if (FINAL_STATES.includes(job.state)) {
      throw new AppError(ErrorCode.JOB_NOT_CANCELLABLE, `Job ${id} already ${job.state}`, { field: 'id' });
    }
    if (job.state === 'queued' && (await this.jobs.cancelQueued(id))) {
      await this.queue.remove(id).catch(() => undefined);
    } else {
      await this.jobs.requestCancel(id);
    }
    this.bus.jobEvents(id);
    return (await this.jobs.findById(id))!;
  }

  async metrics(caller: Principal, id: string, q: { name?: string; after_step?: number; limit: number }): Promise<JobMetricEntity[]> {
    await this.get(caller, id);
    return this.events.series(id, { name: q.name, afterStep: q.after_step, limit: q.limit });
  }

  /** The job's output as stored by its worker; `tail` keeps the last lines. */
  async logs(caller: Principal, id: string, tail?: number): Promise<string> {
    await this.get(caller, id);
    const chunks: string[] = [];
    let after = 0;
    for (;;) {
      const batch = await this.events.after(id, after, 1000, 'log');
      for (const e of batch) chunks.push((e.data as { text: string }).text);
      if (batch.length < 1000) break;
      after = batch[batch.length - 1].id;
    }
    const text = chunks.join('');
    if (tail === undefined) return text;
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines.slice(-tail).join('\n') + (lines.length ? '\n' : '');
  }

  async artifacts(caller: Principal, id: string): Promise<JobArtifactEntity[]> {
    await this.get(caller, id);
    return this.events.listArtifacts(id);
  }

  async openArtifact(caller: Principal, id: string, name: string): Promise<{ artifact: JobArtifactEntity; stream: ReadStream }> {
    await this.get(caller, id);
    const artifact = await this.events.findArtifact(id, name);
    if (!artifact) throw AppError.notFound('Artifact', name);
    if (!existsSync(artifact.path)) {
      throw new AppError(ErrorCode.ARTIFACT_UNAVAILABLE, `Artifact ${name} is stored on worker ${artifact.workerId}, not on this server`, {
        field: 'name',
      });
    }
    return { artifact, stream: createReadStream(artifact.path) };
  }
}

/** The environment a spec names (`environment.id` of train, inference and session jobs), else null. */
function environmentIdOf(spec: Record<string, unknown>): string | null {
  const environment = spec.environment as { id?: unknown } | undefined;
  return typeof environment?.id === 'string' ? environment.id : null;
}
