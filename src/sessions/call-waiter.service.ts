import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalBus } from '../core/local-bus';
import { FINAL_STATES } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import type { SessionCallEntity } from './session-call.entity';
import { SessionCallsRepository } from './session-calls.repository';

/** Re-reads a waited-on call this often when no local signal comes (the worker may be another process). */
const WAIT_POLL_MS = 250;
/** Looks whether the job ended (so nobody will answer) this often while waiting. */
const JOB_CHECK_MS = 2_000;

/** Whether a call is still waiting for its answer. */
export function isOpen(call: SessionCallEntity): boolean {
  return call.state === 'pending' || call.state === 'running';
}

/**
 * Waits, on the API's side, for the answer to a call recorded for a job runner: woken by the local bus
 * when the worker is in this process, else by reading the call again, so it works across machines.
 */
@Injectable()
export class CallWaiter {
  constructor(
    private readonly jobRows: JobsRepository,
    private readonly calls: SessionCallsRepository,
    private readonly bus: LocalBus,
  ) {}

  /**
   * The call once answered, or as it is after `waitMs` (still open). Woken by its own answer (or its job's
   * end) when the worker is in this process, so many waiting calls of one job do not all read again
   * whenever one of them is answered.
   */
  async wait(call: SessionCallEntity, waitMs: number): Promise<SessionCallEntity> {
    const deadline = Date.now() + waitMs;
    let current = call;
    let jobCheckedAt = 0;
    while (isOpen(current)) {
      if (Date.now() - jobCheckedAt >= JOB_CHECK_MS) {
        jobCheckedAt = Date.now();
        if (await this.failIfJobEnded(current)) current = (await this.calls.findById(call.id)) ?? current;
      }
      const left = deadline - Date.now();
      if (left <= 0 || !isOpen(current)) return current;
      await this.nextSignal(call, Math.min(left, WAIT_POLL_MS));
      current = (await this.calls.findById(call.id)) ?? current;
    }
    return current;
  }

  /**
   * A job that ended before a worker ever ran it (cancelled while queued) has no relay to fail its
   * calls; whoever waits on one does it, so no call stays open forever.
   */
  private async failIfJobEnded(call: SessionCallEntity): Promise<boolean> {
    const job = await this.jobRows.findById(call.jobId);
    if (!job || !FINAL_STATES.includes(job.state)) return false;
    await this.calls.failOpen(call.jobId, `The session was ${job.state} before answering this call${job.error ? `: ${job.error}` : ''}`);
    this.bus.jobCallsFailed(call.jobId);
    return true;
  }

  private async nextSignal(call: SessionCallEntity, ms: number): Promise<void> {
    const abort = new AbortController();
    const stops: Array<() => void> = [];
    await Promise.race([
      sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined),
      new Promise<void>((resolve) => {
        stops.push(this.bus.onCallDone(call.id, resolve), this.bus.onJobCallsFailed(call.jobId, resolve));
      }),
    ]);
    for (const stop of stops) stop();
    abort.abort();
  }
}
