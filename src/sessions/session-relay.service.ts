import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LocalBus } from '../core/local-bus';
import type { JobEntity } from '../jobs/job.entity';
import type { AnyJobKind } from '../kinds/spec/job-kind';
import type { CallMessage } from '../runner/runner-protocol';
import type { AttachedJobHook, JobHook } from '../scheduler/job-hooks';
import { JobSupervisor } from '../scheduler/job-supervisor.service';
import { SessionCallsRepository } from './session-calls.repository';

/** How often a worker looks for new calls of the sessions it runs (the local bus wakes it sooner). */
const POLL_MS = 200;

interface Attached {
  send(message: CallMessage): void;
  inFlight: number | null;
  timer: NodeJS.Timeout;
  stopListening: () => void;
  busy: boolean;
}

/**
 * The worker's side of client-driven sessions: hands the calls the API recorded to the session's job
 * runner one at a time, and records what the runner answers. The database is the channel, so the API
 * and the worker may be on different machines. It is the supervisor's hook for the jobs of kinds with
 * the `calls` capability.
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
    return kind.calls;
  }

  attach(job: JobEntity, send: (message: CallMessage) => void): AttachedJobHook {
    const jobId = job.id;
    const entry: Attached = {
      send,
      inFlight: null,
      busy: false,
      timer: setInterval(() => void this.pump(jobId), POLL_MS),
      stopListening: this.bus.onSessionCall(jobId, () => void this.pump(jobId)),
    };
    this.attached.set(jobId, entry);
    return {
      onMessage: (message) => this.result(jobId, message),
      detach: () => this.detach(jobId, 'The session ended before answering this call'),
    };
  }

  /** The runner answered the call in flight. */
  private async result(jobId: string, message: { id: number; result?: unknown; error?: string }): Promise<void> {
    const entry = this.attached.get(jobId);
    await this.calls.finish(message.id, message.error !== undefined ? { error: message.error } : { result: message.result ?? null });
    this.bus.sessionCallDone(jobId);
    if (entry?.inFlight === message.id) entry.inFlight = null;
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
    this.bus.sessionCallDone(jobId);
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
    if (!entry || entry.inFlight !== null || entry.busy) return;
    entry.busy = true;
    try {
      const call = await this.calls.claimNext(jobId);
      if (call && this.attached.get(jobId) === entry) {
        entry.inFlight = call.id;
        entry.send({ type: 'call', id: call.id, op: call.op, args: call.args });
      }
    } catch (error) {
      this.logger.warn(`Session ${jobId}: could not hand out a call: ${(error as Error).message}`);
    } finally {
      entry.busy = false;
    }
  }
}
