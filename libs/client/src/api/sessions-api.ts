import { OpenTinkerError } from '../errors';
import { fit, FitOptions, FitResult } from '../session-fit';
import type { Transport } from '../transport';
import type { Job, SessionCall, SessionOp, SessionSpec } from '../types';
import type { RequestOptions } from './request-options';

/** Options of {@link TrainingSession.call}. */
export interface SessionCallOptions extends RequestOptions {
  /**
   * Your id for the call (the idempotency key): a retry with the same id returns the first call's
   * answer instead of running it again. Default: a random id.
   */
  callId?: string;
  /** Seconds the server holds each request waiting for the answer (default 60); the client polls until it comes. */
  waitSeconds?: number;
}

/**
 * Client-driven training sessions (`kind: "session"` jobs): the server holds the policy, you own the
 * loop. Every call carries a call id, so retries (the client's own, after a dropped connection) never
 * train twice.
 *
 * @example
 * ```ts
 * const session = await client.sessions.start({ kind: 'session', environment: { id: 'math' }, model: { preset: 'tiny-char' } });
 * const metrics = await session.trainStep({ batch_size: 8 });
 * console.log(metrics['reward/mean']);
 * await session.close();
 * ```
 */
export class SessionsApi {
  constructor(private readonly t: Transport) {}

  /** Submits a session job and returns a handle; calls wait until a worker has started it. */
  async start(spec: SessionSpec, options: RequestOptions = {}): Promise<TrainingSession> {
    const job: Job = await this.t.call(this.t.api.POST('/v1/jobs', { body: spec, signal: options.signal }), options.signal);
    return new TrainingSession(this.t, job.id);
  }

  /** A handle on an existing session job. */
  open(jobId: string): TrainingSession {
    return new TrainingSession(this.t, jobId);
  }
}

/** One session: each method is one call, answered by the job runner that holds the policy. */
export class TrainingSession {
  constructor(
    private readonly t: Transport,
    /** The session's job id (watch it, read its metrics and checkpoints like any job's). */
    readonly id: string,
  ) {}

  /**
   * Makes a call and resolves with what the operation returned. Rejects with `OT_ERR_SESSION_CALL_FAILED`
   * when the runner could not do it (its message says why), or with the server's error.
   */
  async call(op: SessionOp, args: Record<string, unknown> = {}, options: SessionCallOptions = {}): Promise<Record<string, unknown>> {
    const callId = options.callId ?? `${op}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    const wait = options.waitSeconds ?? 60;
    // POST is retried like a GET: the call id makes it idempotent.
    let call: SessionCall = await this.t.call(
      this.t.api.POST('/v1/jobs/{id}/calls', {
        params: { path: { id: this.id }, query: { wait_seconds: wait } },
        body: { call_id: callId, op, args },
        signal: options.signal,
        fetch: this.t.idempotentFetch,
      }),
      options.signal,
    );
    while (call.state === 'pending' || call.state === 'running') {
      call = await this.t.call(
        this.t.api.GET('/v1/jobs/{id}/calls/{call_id}', {
          params: { path: { id: this.id, call_id: callId }, query: { wait_seconds: wait } },
          signal: options.signal,
        }),
        options.signal,
      );
    }
    if (call.state === 'failed') {
      throw new OpenTinkerError('OT_ERR_SESSION_CALL_FAILED', `Session ${this.id}: ${op} ${callId} failed: ${call.error ?? 'no reason given'}`, 200);
    }
    return (call.result ?? {}) as Record<string, unknown>;
  }

  /** Rolls out on a batch (inline `tasks`, `indices` of the train split, or the next `batch_size` tasks), updates, returns metrics. */
  trainStep(args: { tasks?: unknown[]; indices?: number[]; batch_size?: number } = {}, options?: SessionCallOptions): Promise<Record<string, number>> {
    return this.call('train_step', args, options) as Promise<Record<string, number>>;
  }

  /** Validation metrics on `tasks`, `indices` of the test split, or its first `size` tasks. */
  validate(args: { tasks?: unknown[]; indices?: number[]; size?: number } = {}, options?: SessionCallOptions): Promise<Record<string, number>> {
    return this.call('validate', args, options) as Promise<Record<string, number>>;
  }

  /** Saves a checkpoint (same layout as train jobs'); resolves with its step and folder. */
  saveCheckpoint(options?: SessionCallOptions): Promise<{ step: number; dir: string }> {
    return this.call('save_checkpoint', {}, options) as Promise<{ step: number; dir: string }>;
  }

  /** Samples a reply from the current policy. */
  sample(
    args: { messages: { role: 'system' | 'user' | 'assistant' | 'tool'; content: string }[]; max_tokens?: number; temperature?: number; top_p?: number; seed?: number },
    options?: SessionCallOptions,
  ): Promise<{ text: string; tokens: number; finish_reason: string }> {
    return this.call('sample', args, options) as Promise<{ text: string; tokens: number; finish_reason: string }>;
  }

  /** Trains this session over steps or your tasks, with validation and checkpoints: see {@link fit}. */
  fit(options: FitOptions): Promise<FitResult> {
    return fit(this, options);
  }

  /** Ends the session: the runner exits and frees its devices. */
  async close(options?: SessionCallOptions): Promise<void> {
    await this.call('close', {}, options);
  }
}
