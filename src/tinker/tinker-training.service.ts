import { Injectable } from '@nestjs/common';
import {
  CreateModelRequest,
  decodeForwardBackwardRequest,
  GetInfoRequest,
  isTinkerWireError,
  LoadWeightsRequest,
  OptimStepRequest,
  SaveWeightsForSamplerRequest,
  SaveWeightsRequest,
  type GetInfoResponse,
  type UntypedAPIFuture,
} from '@opentinker/tinker-wire';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { parseOrThrow } from '../core/zod-error';
import { StorageQuota } from '../datasets/storage-quota.service';
import type { OpLora, TinkerOp, TinkerOpArgs } from '../kinds/tinker/tinker-ops';
import type { SessionCallEntity } from '../sessions/session-call.entity';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { TinkerBaseModels } from './tinker-base-models';
import { modelKey, TinkerCheckpoints } from './tinker-checkpoints.service';
import { checkLoss, datumsOf } from './tinker-datums';
import { requestIdOf } from './tinker-futures.service';
import type { TinkerModelEntity } from './tinker-model.entity';
import { TinkerRunners, turnKey } from './tinker-runners.service';
import { TinkerSessions } from './tinker-sessions.service';
import { TinkerRepository } from './tinker.repository';

/** The most LoRA rank a training client may ask for. */
const MAX_RANK = 1024;

/**
 * Training clients: `create_model`, `get_info`, and the requests that take a client's turn
 * (`forward_backward`, `optim_step`, `save_weights`, `save_weights_for_sampler`, `load_weights`), each
 * checked here and recorded for the client's runner; `load_weights` with a session also creates a client
 * from a checkpoint. A numbered request refused here still takes its turn on the runner (the SDK never
 * sends its `seq_id` again), so the client's later requests do not wait for it.
 */
@Injectable()
export class TinkerTraining {
  constructor(
    private readonly config: AppConfig,
    private readonly repo: TinkerRepository,
    private readonly sessions: TinkerSessions,
    private readonly runners: TinkerRunners,
    private readonly checkpoints: TinkerCheckpoints,
    private readonly bases: TinkerBaseModels,
    private readonly calls: SessionCallsRepository,
    private readonly quota: StorageQuota,
  ) {}

  async createModel(caller: Principal, body: unknown): Promise<UntypedAPIFuture> {
    const req = parseOrThrow(CreateModelRequest, body);
    const session = await this.sessions.active(caller, req.session_id);
    const lora = req.lora_config ?? { rank: 32, seed: null, train_attn: true, train_mlp: true, train_unembed: true };
    if (lora.rank > MAX_RANK) throw new AppError(ErrorCode.VALIDATION, `lora_config.rank ${lora.rank} is over ${MAX_RANK}`, { field: 'lora_config.rank' });
    if (!lora.train_attn && !lora.train_mlp && !lora.train_unembed) {
      throw new AppError(ErrorCode.VALIDATION, 'lora_config: at least one of train_attn, train_mlp and train_unembed must be true', { field: 'lora_config' });
    }
    if (req.optimizer_config.type !== 'adamw') {
      throw new AppError(ErrorCode.VALIDATION, `optimizer_config.type ${req.optimizer_config.type} is not available here (adamw)`, { field: 'optimizer_config.type' });
    }
    const opLora: OpLora = { rank: lora.rank, seed: lora.seed ?? null, train_attn: lora.train_attn, train_mlp: lora.train_mlp, train_unembed: lora.train_unembed };
    const { model, call } = await this.newClient(
      caller,
      session.id,
      req.model_seq_id,
      req.base_model,
      { rank: lora.rank, lora: opLora, loadedFrom: null, userMetadata: req.user_metadata ?? null },
      (m) => ({
        op: 'create_model',
        args: { model: modelKey(m), model_id: m.id, lora: opLora },
      }),
    );
    return { request_id: requestIdOf(call), model_id: model.id };
  }

  /**
   * A new training client `{session}:train:{seq}` on its session's runner for `baseName`: refused past the
   * session's and the runner's limits; a resubmission (same id) gets the first request back.
   */
  private async newClient(
    caller: Principal,
    sessionId: string,
    seq: number,
    baseName: string,
    init: { rank: number; lora: OpLora; loadedFrom: string | null; userMetadata: Record<string, unknown> | null },
    request: (model: TinkerModelEntity) => { op: TinkerOp; args: TinkerOpArgs<'create_model'> | TinkerOpArgs<'create_from_checkpoint'> },
  ): Promise<{ model: TinkerModelEntity; call: SessionCallEntity }> {
    const session = await this.sessions.active(caller, sessionId);
    const id = `${session.id}:train:${seq}`;
    const key = `create:train-${seq}`;
    const known = await this.repo.findModel(id);
    if (known) {
      const first = await this.calls.find(known.jobId, key);
      if (first) return { model: known, call: first };
    }
    const v = this.config.values;
    if ((await this.repo.countModels({ sessionId: session.id })) >= v.tinker_max_models_per_session) {
      throw limit(
        `This Tinker session already has ${v.tinker_max_models_per_session} training clients, the most a session may (operator setting tinker_max_models_per_session)`,
        'tinker_max_models_per_session',
      );
    }
    const runner = await this.runners.runnerFor(caller, session, baseName);
    if ((await this.repo.countModels({ jobId: runner.jobId })) >= v.tinker_max_adapters_per_base) {
      throw limit(
        `This session already has ${v.tinker_max_adapters_per_base} training clients on ${baseName}, the most one runner holds (operator setting tinker_max_adapters_per_base)`,
        'tinker_max_adapters_per_base',
      );
    }
    const now = Date.now();
    const model: TinkerModelEntity = {
      id,
      sessionId: session.id,
      ownerId: caller.userId,
      jobId: runner.jobId,
      seq,
      baseModel: baseName,
      loraRank: init.rank,
      lora: { train_attn: init.lora.train_attn, train_mlp: init.lora.train_mlp, train_unembed: init.lora.train_unembed, seed: init.lora.seed },
      loadedFrom: init.loadedFrom,
      userMetadata: init.userMetadata,
      createdAt: now,
      lastRequestAt: now,
    };
    const inserted = await this.repo.insertModel(model);
    const held = inserted ? model : ((await this.repo.findModel(id)) ?? model);
    const { op, args } = request(held);
    return { model: held, call: await this.runners.record(held.jobId, key, op as 'create_model', args as TinkerOpArgs<'create_model'>) };
  }

  async getInfo(caller: Principal, body: unknown): Promise<GetInfoResponse> {
    const req = parseOrThrow(GetInfoRequest, body);
    const model = await this.checkpoints.ownedModel(caller, req.model_id);
    const base = this.bases.resolve(model.baseModel);
    return {
      model_id: model.id,
      model_data: { arch: base.arch, model_name: model.baseModel, tokenizer_id: base.tokenizerId },
      is_lora: true,
      lora_rank: model.loraRank,
      model_name: model.baseModel,
      type: 'get_info',
    };
  }

  /**
   * A request that takes a training client's turn: an identical resubmission (same model and seq_id)
   * gets the first back; a refusal still records the turn as taken.
   */
  private async turn(
    caller: Principal,
    body: unknown,
    build: (model: TinkerModelEntity, seq: number) => { op: TinkerOp; args: unknown } | Promise<{ op: TinkerOp; args: unknown }>,
  ): Promise<UntypedAPIFuture> {
    const b = (typeof body === 'object' && body !== null ? body : {}) as { model_id?: unknown; seq_id?: unknown };
    if (typeof b.model_id !== 'string') throw new AppError(ErrorCode.VALIDATION, 'model_id: required', { field: 'model_id' });
    const model = await this.checkpoints.ownedModel(caller, b.model_id);
    const seq = b.seq_id;
    if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 0 || seq > 2 ** 31) {
      throw new AppError(ErrorCode.VALIDATION, 'seq_id: a training client numbers its requests 1, 2, 3, …', { field: 'seq_id' });
    }
    const key = turnKey(modelKey(model), seq);
    const first = await this.calls.find(model.jobId, key);
    if (first) return { request_id: requestIdOf(first), model_id: model.id };
    let call: SessionCallEntity;
    try {
      await this.sessions.active(caller, model.sessionId);
      const { op, args } = await build(model, seq);
      call = await this.runners.record(model.jobId, key, op as 'skip', args as TinkerOpArgs<'skip'>);
    } catch (error) {
      // A refusal the SDK will not resubmit (any 4xx but 429) passes the turn on.
      if (error instanceof AppError && error.status >= 400 && error.status < 500 && error.status !== 429) await this.runners.skipTurn(model.jobId, modelKey(model), seq, error);
      throw error;
    }
    await this.repo.touchModel(model.id, Date.now());
    return { request_id: requestIdOf(call), model_id: model.id };
  }

  /** `forward_backward` (and `forward`): the protobuf body as it came, with its Content-Encoding. */
  async forwardBackward(caller: Principal, body: Buffer, contentEncoding: string | undefined): Promise<UntypedAPIFuture> {
    const max = this.config.values.tinker_request_max_bytes;
    let req;
    try {
      req = decodeForwardBackwardRequest(body, { contentEncoding: contentEncoding ?? null, maxBodyBytes: max, maxDecodedBytes: max });
    } catch (error) {
      throw wireError(error);
    }
    return this.turn(caller, { model_id: req.modelId, seq_id: req.seqId }, (model, seq) => {
      const lossFn = checkLoss(req.lossFn, req.lossFnConfig);
      const args: TinkerOpArgs<'forward_backward'> = {
        model: modelKey(model),
        seq_id: seq,
        loss_fn: lossFn,
        loss_fn_config: { ...req.lossFnConfig },
        forward_only: req.forwardOnly,
        data: datumsOf(req, lossFn),
      };
      return { op: 'forward_backward', args };
    });
  }

  async optimStep(caller: Principal, body: unknown): Promise<UntypedAPIFuture> {
    return this.turn(caller, body, (model, seq) => {
      const req = parseOrThrow(OptimStepRequest, body);
      if (!req.adam_params) throw new AppError(ErrorCode.VALIDATION, 'optimizer_params: this server steps with Adam (adam_params)', { field: 'optimizer_params' });
      const p = req.adam_params;
      const args: TinkerOpArgs<'optim_step'> = {
        model: modelKey(model),
        seq_id: seq,
        adam: { learning_rate: p.learning_rate, beta1: p.beta1, beta2: p.beta2, eps: p.eps, weight_decay: p.weight_decay, grad_clip_norm: p.grad_clip_norm },
      };
      return { op: 'optim_step', args };
    });
  }

  /** `save_weights` (`save_state`): adapter and optimizer state under a name. */
  async saveWeights(caller: Principal, body: unknown): Promise<UntypedAPIFuture> {
    return this.turn(caller, body, async (model, seq) => {
      const req = parseOrThrow(SaveWeightsRequest, body);
      await this.quota.assertRoom(caller, 'path');
      return { op: 'save', args: this.saveArgs(model, seq, 'weights', req.path ?? `seq-${seq}`, req) };
    });
  }

  /** `save_weights_for_sampler`: a named sampler checkpoint, or (without a name) a snapshot bound to a new sampler. */
  async saveWeightsForSampler(caller: Principal, body: unknown): Promise<UntypedAPIFuture> {
    return this.turn(caller, body, async (model, seq) => {
      const req = parseOrThrow(SaveWeightsForSamplerRequest, body);
      if (req.kind !== 'snapshot') throw new AppError(ErrorCode.VALIDATION, `kind ${req.kind}: only snapshot samplers are kept here`, { field: 'kind' });
      if (req.path != null) {
        await this.quota.assertRoom(caller, 'path');
        return { op: 'save', args: this.saveArgs(model, seq, 'sampler_weights', req.path, req) };
      }
      const samplerSeq = req.sampling_session_seq_id!;
      const samplerId = `${model.sessionId}:sample:${samplerSeq}`;
      await this.repo.insertSampler({
        id: samplerId,
        sessionId: model.sessionId,
        ownerId: caller.userId,
        jobId: model.jobId,
        seq: samplerSeq,
        baseModel: model.baseModel,
        modelPath: null,
        sourceModelId: model.id,
        createdAt: Date.now(),
      });
      const args: TinkerOpArgs<'snapshot'> = { model: modelKey(model), seq_id: seq, sampler: `sample-${samplerSeq}`, sampling_session_id: samplerId };
      return { op: 'snapshot', args };
    });
  }

  private saveArgs(
    model: TinkerModelEntity,
    seq: number,
    kind: 'weights' | 'sampler_weights',
    name: string,
    req: { ttl_seconds?: number | null; user_metadata?: Record<string, string> | null; overwrite?: boolean },
  ): TinkerOpArgs<'save'> {
    return {
      model: modelKey(model),
      seq_id: seq,
      model_id: model.id,
      kind,
      name: this.checkpoints.checkName(name),
      overwrite: req.overwrite ?? false,
      ttl_seconds: req.ttl_seconds ?? null,
      user_metadata: req.user_metadata ?? null,
    };
  }

  /**
   * `load_weights`: with `session_id` and `model_seq_id`, a new training client from a checkpoint
   * (`create_training_client_from_state*`); with `model_id` and `seq_id`, a checkpoint into an existing
   * client (`load_state*`, and older SDKs' create-then-load).
   */
  async loadWeights(caller: Principal, body: unknown): Promise<UntypedAPIFuture> {
    const b = (typeof body === 'object' && body !== null ? body : {}) as { model_id?: unknown };
    if (b.model_id != null) {
      return this.turn(caller, body, async (model, seq) => {
        const req = parseOrThrow(LoadWeightsRequest, body);
        const { model: source, ref } = await this.checkpoints.resolve(caller, req.path);
        if (this.bases.resolve(source.baseModel).key !== this.bases.resolve(model.baseModel).key) {
          throw new AppError(ErrorCode.VALIDATION, `path: ${req.path} was saved on ${source.baseModel}, not on this training client's ${model.baseModel}`, { field: 'path' });
        }
        const args: TinkerOpArgs<'load_weights'> = { model: modelKey(model), seq_id: seq, model_id: model.id, path: req.path, checkpoint: ref, optimizer: req.optimizer };
        return { op: 'load_weights', args };
      });
    }
    const req = parseOrThrow(LoadWeightsRequest, body);
    const { model: source, ref, meta } = await this.checkpoints.resolve(caller, req.path);
    const lora: OpLora = { rank: meta.lora.rank, seed: meta.lora.seed, train_attn: meta.lora.train_attn, train_mlp: meta.lora.train_mlp, train_unembed: meta.lora.train_unembed };
    const { model, call } = await this.newClient(
      caller,
      req.session_id!,
      req.model_seq_id!,
      source.baseModel,
      { rank: meta.lora.rank, lora, loadedFrom: req.path, userMetadata: req.user_metadata ?? null },
      (m) => ({ op: 'create_from_checkpoint', args: { model: modelKey(m), model_id: m.id, path: req.path, checkpoint: ref, optimizer: req.optimizer } }),
    );
    return { request_id: requestIdOf(call), model_id: model.id };
  }
}

function limit(message: string, setting: string): AppError {
  return new AppError(ErrorCode.LIMIT_EXCEEDED, message, { details: { setting } });
}

/** A body the wire package refused: 413 past a size limit, else 400 naming the field. */
export function wireError(error: unknown): unknown {
  if (!isTinkerWireError(error)) return error;
  const code = error.code === 'TINKER_WIRE_TOO_LARGE' ? ErrorCode.BODY_TOO_LARGE : ErrorCode.VALIDATION;
  return new AppError(code, error.field ? `${error.field}: ${error.message}` : error.message, { ...(error.field ? { field: error.field } : {}) });
}
