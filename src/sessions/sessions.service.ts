import { Injectable } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { LocalBus } from '../core/local-bus';
import { FINAL_STATES } from '../jobs/job.entity';
import { JobsService } from '../jobs-api/jobs.service';
import { findJobKind } from '../kinds/job-kinds';
import { CallWaiter } from './call-waiter.service';
import { parseCallArgs } from './session-call-args';
import { SessionCallEntity, SessionOp } from './session-call.entity';
import { SessionCallsRepository } from './session-calls.repository';

/** Calls of client-driven sessions: records them (idempotently) and waits for the worker's answer. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly jobs: JobsService,
    private readonly calls: SessionCallsRepository,
    private readonly bus: LocalBus,
    private readonly waiter: CallWaiter,
  ) {}

  /**
   * Records a call and waits up to `waitSeconds` for its answer. A call id seen before returns that
   * call (a retried `train_step` never trains twice); reused with a different request it is refused.
   */
  async call(caller: Principal, jobId: string, body: { call_id: string; op: SessionOp; args?: unknown }, waitSeconds: number): Promise<SessionCallEntity> {
    const job = await this.jobs.get(caller, jobId);
    if (!findJobKind(job.kind)?.calls) throw new AppError(ErrorCode.NOT_A_SESSION, `Job ${jobId} is a ${job.kind} job, not a session`, { field: 'id' });
    const args = parseCallArgs(body.op, body.args);
    const existing = await this.calls.find(jobId, body.call_id);
    if (existing) return this.sameRequest(existing, body.op, args, waitSeconds);
    if (FINAL_STATES.includes(job.state)) {
      throw new AppError(ErrorCode.SESSION_CLOSED, `Session ${jobId} is ${job.state}; start a new one`, { field: 'id' });
    }
    const { call, created } = await this.calls.insertOnce(jobId, body.call_id, body.op, args);
    if (!created) return this.sameRequest(call, body.op, args, waitSeconds);
    this.bus.sessionCall(jobId);
    return this.wait(call, waitSeconds);
  }

  async get(caller: Principal, jobId: string, callId: string, waitSeconds: number): Promise<SessionCallEntity> {
    await this.jobs.get(caller, jobId);
    const call = await this.calls.find(jobId, callId);
    if (!call) throw new AppError(ErrorCode.NOT_FOUND, `Call ${callId} not found in session ${jobId}`, { field: 'call_id' });
    return this.wait(call, waitSeconds);
  }

  async list(caller: Principal, jobId: string, limit: number): Promise<SessionCallEntity[]> {
    await this.jobs.get(caller, jobId);
    return this.calls.list(jobId, limit);
  }

  private sameRequest(call: SessionCallEntity, op: SessionOp, args: Record<string, unknown>, waitSeconds: number): Promise<SessionCallEntity> {
    if (call.op !== op || !isDeepStrictEqual(call.args, args)) {
      throw new AppError(ErrorCode.CALL_CONFLICT, `Call id ${call.callId} was already used for a different ${call.op} request`, { field: 'call_id' });
    }
    return this.wait(call, waitSeconds);
  }

  private wait(call: SessionCallEntity, waitSeconds: number): Promise<SessionCallEntity> {
    return this.waiter.wait(call, waitSeconds * 1000);
  }
}
