import { Injectable } from '@nestjs/common';
import { CreateSamplingSessionRequest, SampleRequest, type CreateSamplingSessionResponse, type GetSamplerResponse, type UntypedAPIFuture } from '@opentinker/tinker-wire';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { parseOrThrow } from '../core/zod-error';
import type { TinkerOpArgs } from '../kinds/tinker/tinker-ops';
import { modelKey, TinkerCheckpoints } from './tinker-checkpoints.service';
import { requestIdOf } from './tinker-futures.service';
import type { TinkerSamplerEntity } from './tinker-sampler.entity';
import { TinkerRunners } from './tinker-runners.service';
import { TinkerSessions } from './tinker-sessions.service';
import { TinkerRepository } from './tinker.repository';

/** The most samples one request may ask for. */
const MAX_SAMPLES = 256;

/**
 * Sampling clients: `create_sampling_session` (from a base model or a saved checkpoint), `samplers/{id}`,
 * and `asample` (also `compute_logprobs`), recorded for the session's runner of the sampler's base. The
 * snapshots of `save_weights_and_get_sampling_client` are made by the training side.
 */
@Injectable()
export class TinkerSampling {
  constructor(
    private readonly repo: TinkerRepository,
    private readonly sessions: TinkerSessions,
    private readonly runners: TinkerRunners,
    private readonly checkpoints: TinkerCheckpoints,
  ) {}

  async createSamplingSession(caller: Principal, body: unknown): Promise<CreateSamplingSessionResponse> {
    const req = parseOrThrow(CreateSamplingSessionRequest, body);
    const session = await this.sessions.active(caller, req.session_id);
    const id = `${session.id}:sample:${req.sampling_session_seq_id}`;
    if (await this.repo.findSampler(id)) return { sampling_session_id: id, type: 'create_sampling_session' };
    let baseName: string;
    let modelPath: string | null = null;
    if (req.model_path != null) {
      const { model } = await this.checkpoints.resolve(caller, req.model_path, 'model_path');
      baseName = model.baseModel;
      modelPath = req.model_path;
    } else {
      baseName = req.base_model!;
    }
    const runner = await this.runners.runnerFor(caller, session, baseName);
    await this.repo.insertSampler({
      id,
      sessionId: session.id,
      ownerId: caller.userId,
      jobId: runner.jobId,
      seq: req.sampling_session_seq_id,
      baseModel: baseName,
      modelPath,
      sourceModelId: null,
      createdAt: Date.now(),
    });
    return { sampling_session_id: id, type: 'create_sampling_session' };
  }

  /** The caller's sampler, or 404. */
  private async owned(caller: Principal, id: string, field: string): Promise<TinkerSamplerEntity> {
    const sampler = await this.repo.findSampler(id);
    if (!sampler || sampler.ownerId !== caller.userId) throw new AppError(ErrorCode.NOT_FOUND, `Sampler ${id} not found`, { field });
    return sampler;
  }

  async getSampler(caller: Principal, id: string): Promise<GetSamplerResponse> {
    const sampler = await this.owned(caller, id, 'sampler_id');
    return { sampler_id: sampler.id, base_model: sampler.baseModel, model_path: sampler.modelPath };
  }

  /** `asample`: the future carries one sequence id per sample, in the order of the result's sequences. */
  async sample(caller: Principal, body: unknown, idempotencyKey: string | null): Promise<UntypedAPIFuture> {
    const req = parseOrThrow(SampleRequest, body);
    if (req.sampling_session_id == null)
      throw new AppError(ErrorCode.VALIDATION, 'sampling_session_id: required (create_sampling_session first)', { field: 'sampling_session_id' });
    const sampler = await this.owned(caller, req.sampling_session_id, 'sampling_session_id');
    await this.sessions.active(caller, sampler.sessionId);
    const unsupported: Array<[boolean, string]> = [
      [req.topk_sample_logprobs > 0, 'topk_sample_logprobs'],
      [req.target_prompt_logprobs != null, 'target_prompt_logprobs'],
      [req.prompt_alt_tokens_k > 0, 'prompt_alt_tokens_k'],
      [req.prompt_logprobs_last_n != null, 'prompt_logprobs_last_n'],
      [req.record_stability_info === true, 'record_stability_info'],
    ];
    for (const [asked, field] of unsupported) if (asked) throw new AppError(ErrorCode.VALIDATION, `${field} is not available on this server`, { field });
    if (req.num_samples > MAX_SAMPLES) throw new AppError(ErrorCode.VALIDATION, `num_samples ${req.num_samples} is over ${MAX_SAMPLES}`, { field: 'num_samples' });
    const prompt: number[] = [];
    req.prompt.chunks.forEach((chunk, i) => {
      if (chunk.type !== 'encoded_text')
        throw new AppError(ErrorCode.VALIDATION, `prompt.chunks[${i}]: ${chunk.type} chunks are not supported here (text tokens only)`, { field: `prompt.chunks[${i}]` });
      prompt.push(...chunk.tokens);
    });
    if (prompt.length === 0) throw new AppError(ErrorCode.VALIDATION, 'prompt: no tokens', { field: 'prompt' });
    const p = req.sampling_params;
    const stop = p.stop;
    const seq = req.seq_id ?? null;
    const key = seq !== null ? `sample:${sampler.id}:${seq}` : `sample:${sampler.id}:${idempotencyKey ?? randomUUID()}`;
    const args: TinkerOpArgs<'sample'> = {
      sampler: `sample-${sampler.seq}`,
      source: await this.sourceOf(caller, sampler),
      prompt,
      num_samples: req.num_samples,
      max_tokens: p.max_tokens ?? null,
      seed: p.seed ?? null,
      ...stopOf(stop),
      temperature: p.temperature,
      top_k: p.top_k,
      top_p: p.top_p,
      prompt_logprobs: req.prompt_logprobs === true,
      topk_prompt_logprobs: req.topk_prompt_logprobs,
    };
    const call = await this.runners.record(sampler.jobId, key, 'sample', args);
    const label = seq ?? call.id;
    return { request_id: requestIdOf(call), sample_sequence_ids: Array.from({ length: req.num_samples }, (_, i) => `${sampler.id}:seq:${label}:${i}`) };
  }

  private async sourceOf(caller: Principal, sampler: TinkerSamplerEntity): Promise<TinkerOpArgs<'sample'>['source']> {
    if (sampler.sourceModelId !== null) {
      const model = await this.checkpoints.ownedModel(caller, sampler.sourceModelId, 'sampling_session_id');
      return { type: 'snapshot', model: modelKey(model) };
    }
    if (sampler.modelPath !== null) return { type: 'checkpoint', checkpoint: (await this.checkpoints.resolve(caller, sampler.modelPath, 'sampling_session_id')).ref };
    return { type: 'base' };
  }
}

/**
 * `SamplingParams.stop` for the runner: absent = the model's end-of-sequence tokens; `[]` = never stop;
 * strings or token ids stop there as well as at the end-of-sequence tokens (null: the model's own).
 */
function stopOf(stop: SampleRequest['sampling_params']['stop']): Pick<TinkerOpArgs<'sample'>, 'stop_tokens' | 'stop_strings' | 'extra_stop_tokens'> {
  if (stop == null) return { stop_tokens: null, extra_stop_tokens: [], stop_strings: [] };
  if (typeof stop === 'string') return { stop_tokens: null, extra_stop_tokens: [], stop_strings: [stop] };
  if (stop.length === 0) return { stop_tokens: [], extra_stop_tokens: [], stop_strings: [] };
  if (stop.every((s) => typeof s === 'number')) return { stop_tokens: null, extra_stop_tokens: stop as number[], stop_strings: [] };
  return { stop_tokens: null, extra_stop_tokens: [], stop_strings: stop as string[] };
}
