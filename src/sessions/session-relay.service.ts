import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LocalBus } from '../core/local-bus';
import type { JobEntity } from '../jobs/job.entity';
import { findJobKind } from '../kinds/job-kinds';
import type { AnyJobKind } from '../kinds/spec/job-kind';
import { USER_ERROR_PREFIX, type CallMessage } from '../runner/runner-protocol';
import type { AttachedJobHook, JobFailure, JobHook } from '../scheduler/job-hooks';
import { JobSupervisor } from '../scheduler/job-supervisor.service';
import { SessionCallsRepository } from './session-calls.repository';

/** How often a worker looks for new calls of the sessions it runs (the local bus wakes it sooner). */
const POLL_MS = 200;

/** Calls handed out at once to a runner that takes them all (`callRelay: 'all'`) per look. */
const BATCH = 256;

interface Attached {
  send(message: CallMessage): void;
  /** Calls handed to the runner and not answered yet. */
  inFlight: Set<number>;
  /** How many may be in flight at once: 1 for a runner that answers one at a time. */
  window: number;
  timer: NodeJS.Timeout;
  stopListening: () => void;
  busy: boolean;
}

/**
 * The worker's side of calls to job runners: hands the calls the API recorded (a session's through
 * `POST /v1/jobs/:id/calls`, a Tinker session's through `/api/v1`) to the job's runner, and records
 * what the runner answers. The database is the channel, so the API and the worker may be on different
 * machines. A kind's `callRelay` says how: one at a time (the next once the last is answered), or every
 * call as soon as it is recorded (a runner that orders and batches them itself). It is the
 * supervisor's hook for the jobs of kinds that take calls.
 */
@Injectable()
export class SessionRelayService implements JobHook, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('SessionRelay');
  private readonly attached = new Map<string, Attached>();

  constructor(
    private readonly calls: SessionCallsRepository,
    private readonly bus: LocalBus,
    private readonly modules: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.modules.get(JobSupervisor, { strict: false }).addHook(this);
  }

  appliesTo(kind: AnyJobKind): boolean {
    return kind.callRelay !== null;
  }

  attach(job: JobEntity, send: (message: CallMessage) => void): AttachedJobHook {
    const jobId = job.id;
    const entry: Attached = {
      send,
      inFlight: new Set(),
      window: findJobKind(job.kind)?.callRelay === 'all' ? Infinity : 1,
      busy: false,
      timer: setInterval(() => void this.pump(jobId), POLL_MS),
      stopListening: this.bus.onSessionCall(jobId, () => void this.pump(jobId)),
    };
    this.attached.set(jobId, entry);
    return {
      onMessage: (message) => this.result(jobId, message),
      detach: (failure) => this.detach(jobId, failure ? failedCallError(failure) : 'The session ended before answering this call'),
    };
  }

  /** The runner answered the call in flight. */
  private async result(jobId: string, message: { id: number; result?: unknown; error?: string }): Promise<void> {
    const entry = this.attached.get(jobId);
    await this.calls.finish(message.id, message.error !== undefined ? { error: message.error } : { result: message.result ?? null });
    this.bus.callDone(message.id);
    entry?.inFlight.delete(message.id);
    void this.pump(jobId);
  }

  /** The session's runner is gone: calls it had not answered fail with `reason`. */
  private async detach(jobId: string, reason: string): Promise<void> {
    const entry = this.attached.get(jobId);
    if (!entry) return;
    clearInterval(entry.timer);
    entry.stopListening();
    this.attached.delete(jobId);
    await this.calls.failOpen(jobId, reason);
    this.bus.jobCallsFailed(jobId);
  }

  onModuleDestroy(): void {
    for (const entry of this.attached.values()) {
      clearInterval(entry.timer);
      entry.stopListening();
    }
    this.attached.clear();
  }

  private async pump(jobId: string): Promise<void> {
    const entry = this.attached.get(jobId);
    if (!entry || entry.inFlight.size >= entry.window || entry.busy) return;
    entry.busy = true;
    try {
      const calls = await this.calls.claimPending(jobId, Math.min(BATCH, entry.window - entry.inFlight.size));
      for (const call of calls) {
        if (this.attached.get(jobId) !== entry) break;
        entry.inFlight.add(call.id);
        entry.send({ type: 'call', id: call.id, op: call.op, args: call.args });
      }
    } catch (error) {
      this.logger.warn(`Session ${jobId}: could not hand out a call: ${(error as Error).message}`);
    } finally {
      entry.busy = false;
    }
  }
}

/**
 * The error of the calls a failed runner leaves unanswered: the job's own error (which names, say, the
 * model it could not load and why), the caller's mistake when the job's inputs were refused.
 */
export function failedCallError(failure: JobFailure): string {
  const text = `The session's runner failed: ${failure.error}`;
  return failure.category === 'user' ? USER_ERROR_PREFIX + text : text;
}
