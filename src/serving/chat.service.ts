import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { JobsService } from '../jobs-api/jobs.service';
import { jobCheckpointsDir } from '../rollout/checkpoint-folders';
import { listCheckpointSteps } from '../checkpoints/checkpoint-store';
import { CheckpointsService } from '../checkpoints/checkpoints.service';
import { ChatCompletionRequest, chatParams, ParsedChat } from './chat-request';
import type { ChatCompletionChunkDto, ChatCompletionDto, ModelDto, ModelListDto, UsageDto, UserModelDto } from './chat.dto';
import { HubModelsService } from './hub-models.service';
import { checkpointModelId, parseModelName } from './model-names';
import { ModelPoolService } from './model-pool.service';
import { UserModelsService } from './user-models.service';
import { isUserModelRef, parseUserModelRef, userModelName } from '../models/user-model-files';
import type { UserModelEntity } from '../models/user-model.entity';
import type { GenerateResult, TokenLogprob } from '../rollout/sampling-schemas';
import { TinkerCheckpoints } from '../tinker/tinker-checkpoints.service';

/** One model a request may use: a checkpoint or uploaded model of the caller's, or a Hub model of the server's cache. */
export interface ServedModel {
  /** `job:<job id>/step-<n>`, `model:<id>` or `hf:Org/Name@<commit>`: what answers and `GET /v1/models` name it. */
  id: string;
  /** The Hugging Face folder to load. */
  dir: string;
}

/** A validated request bound to its checkpoint: everything checked before any answer is sent. */
export interface PreparedChat {
  chat: ParsedChat;
  model: ServedModel;
  id: string;
  created: number;
}

const MODELS_SCANNED = 200;

/** OpenAI-compatible chat completions served from jobs' checkpoints and cached Hub models, in model server processes. */
@Injectable()
export class ChatService {
  constructor(
    private readonly jobs: JobsService,
    private readonly checkpoints: CheckpointsService,
    private readonly hubModels: HubModelsService,
    private readonly pool: ModelPoolService,
    private readonly userModels: UserModelsService,
    private readonly tinker: TinkerCheckpoints,
  ) {}

  /**
   * The model a name means for this caller: `hf:Org/Name[@revision]` a Hub model of the server's cache
   * that the caller may use, `model:<id>` a model folder the caller uploaded, `tinker://<model id>/<weights|
   * sampler_weights>/<name>` a Tinker checkpoint of the caller's (its adapter on its base), anything else one of the caller's
   * checkpoints (`job:<job id>[/step-<n>]`, also without `job:`, or a job's name). Another user's
   * checkpoint or model is "not found"; `field` is the request field errors name.
   */
  async resolve(caller: Principal, model: string, field = 'model'): Promise<ServedModel> {
    if (this.hubModels.isHubName(model.trim())) return this.hubModels.resolve(caller, model.trim());
    if (model.trim().startsWith('tinker://')) return this.tinkerCheckpoint(caller, model.trim(), field);
    const notFound = (why: string) => new AppError(ErrorCode.MODEL_NOT_FOUND, `Model ${JSON.stringify(model)} not found: ${why}`, { field });
    if (isUserModelRef(model.trim())) {
      const id = parseUserModelRef(model.trim());
      if (id === null) throw notFound('expected model:<id> (an id of GET /v1/models)');
      const uploaded = await this.userModels.get(caller, id, field);
      return { id: userModelName(uploaded.id), dir: this.userModels.dir(uploaded) };
    }
    const name = parseModelName(model);
    if (!name) throw notFound('expected job:<job id>, job:<job id>/step-<n> or a job name');
    let jobId: string;
    if (name.by === 'id') {
      try {
        jobId = (await this.jobs.get(caller, name.ref)).id;
      } catch (error) {
        if (error instanceof AppError && error.code === ErrorCode.NOT_FOUND) throw notFound('no such job');
        throw error;
      }
    } else {
      const matches = await this.jobs.named(caller, name.ref, 10);
      if (matches.length === 0) throw notFound('none of your jobs has that name or id');
      if (matches.length > 1) {
        throw new AppError(ErrorCode.MODEL_AMBIGUOUS, `Several of your jobs are named ${JSON.stringify(name.ref)} (${matches.map((j) => j.id).join(', ')}); name one by id`, {
          field: 'model',
        });
      }
      jobId = matches[0].id;
    }
    const steps = await listCheckpointSteps(this.checkpoints.jobsDir, jobId);
    if (steps.length === 0) throw notFound(`job ${jobId} has no checkpoint yet`);
    const step = name.step ?? steps[steps.length - 1];
    if (!steps.includes(step)) throw notFound(`job ${jobId} has no checkpoint at step ${step} (it has ${steps.map((s) => `step-${s}`).join(', ')})`);
    const dir = join(jobCheckpointsDir(this.checkpoints.jobsDir, jobId), `step-${step}`, 'model');
    if (!existsSync(join(dir, 'config.json'))) throw notFound(`checkpoint step-${step} of job ${jobId} has no model folder`);
    return { id: checkpointModelId(jobId, step), dir };
  }

  /** One of the caller's Tinker checkpoints; a Hub base must be one of the cache's snapshots the caller may use, as any Hub model chat serves. */
  private async tinkerCheckpoint(caller: Principal, path: string, field: string): Promise<ServedModel> {
    const { dir, meta } = await this.tinker.resolve(caller, path, field);
    if ('path' in meta.base && this.hubModels.isHubName(meta.base.path)) await this.hubModels.resolve(caller, meta.base.path);
    return { id: path, dir };
  }

  /** Checks the request and finds the checkpoint (errors here are plain HTTP errors, before any stream starts). */
  async prepare(caller: Principal, request: ChatCompletionRequest): Promise<PreparedChat> {
    const chat = chatParams(request);
    const model = await this.resolve(caller, chat.model);
    return { chat, model, id: `chatcmpl-${randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000) };
  }

  /** OpenAI's `chat.completion`. */
  async complete(p: PreparedChat): Promise<ChatCompletionDto> {
    const result = await this.pool.generate(p.model.dir, p.chat.generate);
    return {
      id: p.id,
      object: 'chat.completion',
      created: p.created,
      model: p.model.id,
      choices: result.choices.map((c, index) => ({
        index,
        message: { role: 'assistant', content: c.text },
        logprobs: c.logprobs ? { content: c.logprobs.map(withTop) } : null,
        finish_reason: c.finishReason,
      })),
      usage: usageOf(result),
    };
  }

  /**
   * Waits until the checkpoint is loaded, so a stream answers load failures with a real HTTP status
   * before its headers go out.
   */
  async load(p: PreparedChat): Promise<void> {
    await this.pool.load(p.model.dir);
  }

  /**
   * Streams OpenAI's `chat.completion.chunk`s: a role chunk per choice, content as the model produces
   * it, a finishing chunk per choice, and a usage chunk when `stream_options.include_usage` asked.
   */
  async stream(p: PreparedChat, emit: (chunk: ChatCompletionChunkDto) => void): Promise<void> {
    const chunk = (choices: ChatCompletionChunkDto['choices'], usage?: UsageDto | null): ChatCompletionChunkDto => ({
      id: p.id,
      object: 'chat.completion.chunk',
      created: p.created,
      model: p.model.id,
      choices,
      ...(p.chat.includeUsage ? { usage: usage ?? null } : {}),
    });
    for (let index = 0; index < p.chat.generate.n; index++) emit(chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
    const result = await this.pool.generate(p.model.dir, p.chat.generate, (index, text, logprobs) =>
      emit(chunk([{ index, delta: { content: text }, logprobs: logprobs ? { content: logprobs.map(withTop) } : null, finish_reason: null }])),
    );
    result.choices.forEach((c, index) => emit(chunk([{ index, delta: {}, logprobs: null, finish_reason: c.finishReason }])));
    if (p.chat.includeUsage) emit(chunk([], usageOf(result)));
  }

  /** The caller's servable checkpoints (of their newest jobs), then their uploaded models, then the Hub models of the server's cache they may use, as OpenAI's model list. */
  async models(caller: Principal): Promise<ModelListDto> {
    const jobs = await this.jobs.recent(caller, MODELS_SCANNED);
    const data: ModelDto[] = [];
    for (const job of jobs) {
      for (const step of (await listCheckpointSteps(this.checkpoints.jobsDir, job.id)).reverse()) {
        if (!existsSync(join(jobCheckpointsDir(this.checkpoints.jobsDir, job.id), `step-${step}`, 'model', 'config.json'))) continue;
        data.push({
          id: checkpointModelId(job.id, step),
          object: 'model',
          created: Math.floor(job.createdAt / 1000),
          owned_by: caller.name,
          job_id: job.id,
          job_name: job.name,
          step,
        });
      }
    }
    for (const m of await this.userModels.list(caller)) data.push(userModelDto(m, caller));
    for (const m of await this.hubModels.visibleTo(caller)) {
      data.push({ id: m.id, object: 'model', created: m.created, owned_by: m.owner, repo: m.repo, commit: m.commit, revisions: m.revisions });
    }
    return { object: 'list', data };
  }

  /**
   * One model as `GET /v1/models` lists it, by any name `model` takes; the answer's `id` is its
   * canonical name (`job:<id>/step-<n>` for `job:<id>` or a job name, `hf:Org/Name@<commit>` for a branch).
   */
  async model(caller: Principal, name: string): Promise<ModelDto> {
    const served = await this.resolve(caller, name, 'id');
    const id = parseUserModelRef(served.id);
    if (id !== null) return userModelDto(await this.userModels.get(caller, id), caller);
    const listed = served.id.startsWith('hf:') ? (await this.hubModels.visibleTo(caller)).find((m) => m.id === served.id) : undefined;
    if (listed) return { id: listed.id, object: 'model', created: listed.created, owned_by: listed.owner, repo: listed.repo, commit: listed.commit, revisions: listed.revisions };
    const checkpoint = parseModelName(served.id);
    if (!checkpoint || checkpoint.by !== 'id' || checkpoint.step === null)
      throw new AppError(ErrorCode.MODEL_NOT_FOUND, `Model ${JSON.stringify(name)} not found`, { field: 'id' });
    const job = await this.jobs.get(caller, checkpoint.ref);
    return { id: served.id, object: 'model', created: Math.floor(job.createdAt / 1000), owned_by: caller.name, job_id: job.id, job_name: job.name, step: checkpoint.step };
  }
}

export function userModelDto(m: UserModelEntity, caller: Principal): UserModelDto {
  return {
    id: userModelName(m.id),
    object: 'model',
    created: Math.floor(m.createdAt / 1000),
    owned_by: caller.name,
    name: m.name,
    model_type: m.modelType,
    bytes: m.bytes,
    content_sha256: m.contentSha256,
    files: m.files.map((f) => ({ path: f.path, size: f.size })),
  };
}

/** OpenAI's entry of a sampled token: `top_logprobs` holds the most likely tokens at its place (empty unless asked for). */
function withTop(t: TokenLogprob) {
  return { token: t.token, logprob: t.logprob, bytes: t.bytes, top_logprobs: (t.top ?? []).map((a) => ({ token: a.token, logprob: a.logprob, bytes: a.bytes })) };
}

function usageOf(result: GenerateResult): UsageDto {
  const completion = result.choices.reduce((a, c) => a + c.completionTokens, 0);
  return { prompt_tokens: result.promptTokens, completion_tokens: completion, total_tokens: result.promptTokens + completion };
}
