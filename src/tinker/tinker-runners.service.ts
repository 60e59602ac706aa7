import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { LocalBus } from '../core/local-bus';
import { JobsService } from '../jobs-api/jobs.service';
import { FINAL_STATES, type JobEntity } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import type { TinkerOp, TinkerOpArgs } from '../kinds/tinker/tinker-ops';
import { tinkerKind } from '../kinds/tinker/tinker.kind';
import type { SessionCallEntity } from '../sessions/session-call.entity';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { TinkerBaseModels, type ResolvedBase } from './tinker-base-models';
import type { TinkerSessionEntity } from './tinker-session.entity';
import { TinkerRepository } from './tinker.repository';

/** A session's runner for one base model. */
export interface RunnerRef {
  jobId: string;
  base: ResolvedBase;
}

/**
 * The runners of Tinker sessions and the requests recorded for them. A session's models and samplers on
 * one base model live in one `tinker` job, which this service submits (through the jobs service, so the
 * scheduler places it on a worker like any job) the first time the session uses that base. A request is
 * a call of that job (`session_calls`): recorded here once per key, so a resubmission finds the first,
 * handed to the runner by its worker's relay, and answered through `retrieve_future`.
 */
@Injectable()
export class TinkerRunners {
  /** Runner lookups in progress per session, so two requests naming a new base start one runner. */
  private readonly starting = new Map<string, Promise<unknown>>();

  constructor(
    private readonly config: AppConfig,
    private readonly repo: TinkerRepository,
    private readonly jobs: JobsService,
    private readonly jobRows: JobsRepository,
    private readonly calls: SessionCallsRepository,
    private readonly bus: LocalBus,
    private readonly bases: TinkerBaseModels,
  ) {}

  /** The session's live runner for the base model `baseName`, submitted as a new job when it has none. */
  runnerFor(caller: Principal, session: TinkerSessionEntity, baseName: string): Promise<RunnerRef> {
    const base = this.bases.resolve(baseName);
    const previous = this.starting.get(session.id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.findOrStart(caller, session, baseName, base));
    this.starting.set(session.id, next);
    const forget = () => {
      if (this.starting.get(session.id) === next) this.starting.delete(session.id);
    };
    next.then(forget, forget);
    return next;
  }

  private async findOrStart(caller: Principal, session: TinkerSessionEntity, baseName: string, base: ResolvedBase): Promise<RunnerRef> {
    for (const runner of await this.repo.runnersOf(session.id)) {
      if (runner.baseKey !== base.key) continue;
      const job = await this.jobRows.findById(runner.jobId);
      if (job && !FINAL_STATES.includes(job.state)) return { jobId: runner.jobId, base };
    }
    const v = this.config.values;
    const spec = tinkerKind.parse({
      kind: 'tinker',
      name: `tinker ${baseName}`.slice(0, 128),
      session_id: session.id,
      base_model: baseName,
      model: base.spec,
      limits: {
        max_adapters: v.tinker_max_adapters_per_base,
        adapter_memory_mb: v.tinker_adapter_memory_mb,
        samplers_per_model: v.tinker_samplers_per_model,
        seq_gap_seconds: v.tinker_seq_gap_seconds,
        max_sample_tokens: v.tinker_max_sample_tokens,
      },
      resources: { gpus: v.tinker_gpus, cpu_slots: v.tinker_cpu_slots },
    });
    let job: JobEntity;
    try {
      job = await this.jobs.submit(caller, spec as unknown as Parameters<JobsService['submit']>[1]);
    } catch (error) {
      throw asBaseModelError(error);
    }
    await this.repo.insertRunner({ jobId: job.id, sessionId: session.id, ownerId: session.ownerId, baseKey: base.key, createdAt: Date.now() });
    return { jobId: job.id, base };
  }

  /**
   * Records a request for a runner under `key`: a request with a key seen before (the SDK resubmitting
   * it) returns the first. Refused with 429 while the runner has `tinker_max_open_requests` unanswered
   * (the SDK backs off and sends it again).
   */
  async record<O extends TinkerOp>(jobId: string, key: string, op: O, args: TinkerOpArgs<O>): Promise<SessionCallEntity> {
    const existing = await this.calls.find(jobId, key);
    if (existing) return existing;
    const job = await this.jobRows.findById(jobId);
    if (!job || FINAL_STATES.includes(job.state)) {
      // Its models and samplers went with it; a new training client or sampler starts a new runner.
      throw new AppError(ErrorCode.GONE, `The runner that held this (job ${jobId}) has ended${job ? ` (${job.state}${job.error ? `: ${job.error}` : ''})` : ''}`);
    }
    const max = this.config.values.tinker_max_open_requests;
    if ((await this.calls.countOpen(jobId)) >= max) {
      throw new AppError(ErrorCode.BUSY, `This session's runner already has ${max} requests waiting (operator setting tinker_max_open_requests); send this one again later`, {
        retryAfter: 1,
      });
    }
    const { call } = await this.calls.insertOnce(jobId, key, op, args as Record<string, unknown>);
    this.bus.sessionCall(jobId);
    return call;
  }

  /**
   * Records that a numbered request of a training client was refused: the SDK gave it a `seq_id` and will
   * not send that number again, so the runner must not wait for it.
   */
  async skipTurn(jobId: string, model: string, seqId: number, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    await this.record(jobId, turnKey(model, seqId), 'skip', { model, seq_id: seqId, error: message }).catch(() => undefined);
  }

  /** Ends a runner: cancelled while queued, else told to close (it fails what it had not run and exits). */
  async end(runnerJobId: string, ownerId: string, reason: string): Promise<void> {
    const job = await this.jobRows.findById(runnerJobId);
    if (!job || FINAL_STATES.includes(job.state)) return;
    if (job.state === 'queued') {
      await this.jobs.cancel(ownerPrincipal(ownerId), runnerJobId).catch(() => undefined);
      return;
    }
    await this.calls.insertOnce(runnerJobId, 'close', 'close', { reason });
    this.bus.sessionCall(runnerJobId);
  }
}

/** The call key of a training client's numbered request (its dedupe key). */
export function turnKey(model: string, seqId: number): string {
  return `turn:${model}:${seqId}`;
}

/** Acting for a user on their own jobs (ending a session's runners when it expires). */
function ownerPrincipal(ownerId: string): Principal {
  return { userId: ownerId, name: '', role: 'user', keyId: '' };
}

/** A refusal of the runner's job spec speaks of `base_model`, the field the client sent. */
function asBaseModelError(error: unknown): unknown {
  if (!(error instanceof AppError) || error.field === undefined || !/^(model|kind)/.test(error.field)) return error;
  return new AppError(error.code, error.message.replace(/^model\.path\b/, 'base_model'), { field: 'base_model', details: error.details, retryAfter: error.retryAfter });
}
