import { Injectable } from '@nestjs/common';
import { CancelFutureRequest, encodeForwardBackwardOutput, encodeSampleResponse, FutureRetrieveRequest, type TryAgainResponse } from '@opentinker/tinker-wire';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { LocalBus } from '../core/local-bus';
import { parseOrThrow } from '../core/zod-error';
import { JobsRepository } from '../jobs/jobs.repository';
import { parseIpcMessage } from '../core/ipc-message';
import { TinkerAnswered } from '../kinds/tinker/tinker-ops';
import { USER_ERROR_PREFIX } from '../runner/runner-protocol';
import { CallWaiter, isOpen } from '../sessions/call-waiter.service';
import type { SessionCallEntity } from '../sessions/session-call.entity';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { tinkerPath } from './tinker-checkpoints.service';
import { TinkerRepository } from './tinker.repository';

/** A future's request id: its runner job and its call, `<job id>.<call number>`. */
export function requestIdOf(call: Pick<SessionCallEntity, 'jobId' | 'id'>): string {
  return `${call.jobId}.${call.id}`;
}

const REQUEST_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(\d{1,15})$/;

/** What `retrieve_future` answers: JSON, or protobuf bytes (forward/backward and sample results). */
export type FutureAnswer = { json: unknown } | { protobuf: Uint8Array };

/**
 * Futures: `retrieve_future` holds a poll until the request's answer is in or `tinker_poll_seconds`
 * passed (the SDK polls again at once, and gives up on one poll after 45 s), then answers the result,
 * `{error, category}` (`user` for the caller's mistakes, which the SDK raises at once), or `try_again`
 * with the queue's state (a runner still waiting for devices shows as `paused_capacity`).
 */
@Injectable()
export class TinkerFutures {
  constructor(
    private readonly config: AppConfig,
    private readonly repo: TinkerRepository,
    private readonly calls: SessionCallsRepository,
    private readonly waiter: CallWaiter,
    private readonly jobs: JobsRepository,
    private readonly bus: LocalBus,
  ) {}

  /** The caller's request, or 404 (an id that is not one, someone else's, or one answered too long ago). */
  private async owned(caller: Principal, requestId: string): Promise<SessionCallEntity> {
    const m = REQUEST_ID.exec(requestId);
    const call = m ? await this.calls.findById(Number(m[2])) : null;
    const runner = call && call.jobId === m![1] ? await this.repo.findRunner(call.jobId) : null;
    if (!call || !runner || runner.ownerId !== caller.userId) {
      throw new AppError(ErrorCode.NOT_FOUND, `Request ${requestId} not found (answered requests are kept ${this.config.values.tinker_result_keep_seconds} s)`, {
        field: 'request_id',
      });
    }
    return call;
  }

  async retrieve(caller: Principal, body: unknown): Promise<FutureAnswer> {
    const req = parseOrThrow(FutureRetrieveRequest, body);
    const call = await this.waiter.wait(await this.owned(caller, req.request_id), this.config.values.tinker_poll_seconds * 1000);
    if (isOpen(call)) return { json: await this.tryAgain(call, req.request_id) };
    if (call.state === 'failed') {
      const error = call.error ?? 'failed';
      const user = error.startsWith(USER_ERROR_PREFIX);
      return { json: { error: user ? error.slice(USER_ERROR_PREFIX.length) : error, category: user ? 'user' : 'server' } };
    }
    return answer(parseIpcMessage(TinkerAnswered, { op: call.op, args: call.args, result: call.result }, `the runner of job ${call.jobId}`));
  }

  private async tryAgain(call: SessionCallEntity, requestId: string): Promise<TryAgainResponse> {
    const job = await this.jobs.findById(call.jobId);
    if (job?.state === 'queued') {
      return {
        type: 'try_again',
        request_id: requestId,
        queue_state: 'paused_capacity',
        queue_state_reason: `This session's runner on ${String((job.spec as { base_model?: unknown }).base_model)} (job ${job.id}) is waiting for a worker with free devices`,
      };
    }
    return { type: 'try_again', request_id: requestId, queue_state: 'active' };
  }

  /** `cancel_future`: a request still waiting for its runner is dropped; one already handed over runs to its end. */
  async cancel(caller: Principal, body: unknown): Promise<void> {
    const req = parseOrThrow(CancelFutureRequest, body);
    const call = await this.owned(caller, req.request_id);
    if (call.state !== 'pending') return;
    await this.calls.finish(call.id, { error: `${USER_ERROR_PREFIX}cancelled by the client` });
    this.bus.callDone(call.id);
  }
}

/** A finished request's result as the SDK reads it for its request type. */
function answer(done: TinkerAnswered): FutureAnswer {
  switch (done.op) {
    case 'create_model':
      return { json: { model_id: done.args.model_id, type: 'create_model' } };
    case 'create_from_checkpoint':
    case 'load_weights':
      return { json: { path: done.args.path, model_id: done.args.model_id, type: 'load_weights' } };
    case 'forward_backward':
      return {
        protobuf: encodeForwardBackwardOutput({
          lossFnOutputs: done.result.outputs.map((o) => ({ logprobs: Float32Array.from(o.logprobs), elementwise_loss: Float32Array.from(o.elementwise_loss) })),
          metrics: done.result.metrics,
        }),
      };
    case 'optim_step':
      return { json: { metrics: done.result.metrics } };
    case 'save':
      return { json: { path: tinkerPath(done.args.model_id, done.args.kind, done.args.name), type: done.args.kind === 'weights' ? 'save_weights' : 'save_weights_for_sampler' } };
    case 'snapshot':
      return { json: { sampling_session_id: done.args.sampling_session_id, type: 'save_weights_for_sampler' } };
    case 'sample': {
      const r = done.result;
      return {
        protobuf: encodeSampleResponse({
          sequences: r.sequences.map((s) => ({ stopReason: s.stop_reason, tokens: s.tokens, logprobs: s.logprobs })),
          ...(r.prompt_logprobs ? { promptLogprobs: r.prompt_logprobs } : {}),
          ...(r.topk_prompt_logprobs
            ? { topkPromptLogprobs: { k: r.topk_prompt_logprobs.k, tokenIds: r.topk_prompt_logprobs.token_ids, logprobs: r.topk_prompt_logprobs.logprobs } }
            : {}),
        }),
      };
    }
    case 'skip':
    case 'close':
      return { json: {} };
  }
}
