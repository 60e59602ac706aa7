import {
  ClientConfigResponse,
  CreateModelResponse,
  CreateSamplingSessionResponse,
  CreateSessionResponse,
  GetServerCapabilitiesResponse,
  UntypedAPIFuture,
} from '@opentinker/tinker-wire';
import { isOpenTinkerError, OpenTinkerError } from '../errors';
import { parseAnswer, type ChunkLimits, type TinkerContext } from './tinker-context';
import { pollFuture, type QueueStateChange } from './tinker-futures';
import { TinkerHttp, type TinkerHttpOptions } from './tinker-http';
import { TinkerRestClient } from './tinker-rest-client';
import { SamplingClient } from './tinker-sampling-client';
import { TrainingClient } from './tinker-training-client';
import { camelize, type GetServerCapabilitiesResponse as Capabilities } from './tinker-types';

/** Options of {@link ServiceClient}. */
export interface ServiceClientOptions extends TinkerHttpOptions {
  /** Stored with the session (`user_metadata`). */
  userMetadata?: Record<string, string>;
  /** Stored with the session (`tags`). */
  tags?: string[];
  /** Called when a request waits (for devices: `paused_capacity`, with the reason) or runs again. */
  onQueueState?: (change: QueueStateChange) => void;
  /** How often the session's heartbeat goes (default 10 s, as the SDK's). */
  heartbeatIntervalMs?: number;
}

/** Options of {@link ServiceClient.createLoraTrainingClient}, with the SDK's defaults. */
export interface LoraTrainingClientOptions {
  /** A preset (`tiny-char`), a Hub repo (`Qwen/Qwen2.5-0.5B-Instruct`), `model:<id>`, `job:<id>`, or a folder under the operator's `model_roots`. */
  baseModel: string;
  /** The adapter's rank (default 32). */
  rank?: number;
  /** Seeds the adapter's initial weights. */
  seed?: number;
  /** LoRA on the MLP projections (default true). */
  trainMlp?: boolean;
  /** LoRA on the attention projections (default true). */
  trainAttn?: boolean;
  /** LoRA on the output projection (default true). */
  trainUnembed?: boolean;
  userMetadata?: Record<string, string>;
  signal?: AbortSignal;
}

/** What the client says it is, in `sdk_version` (the server keeps it with the session). */
const CLIENT_VERSION = 'opentinker-client-ts-0.1';
const DEFAULT_HEARTBEAT_MS = 10_000;
/** The heartbeat's own timeout (the SDK's); it is never retried, the next one comes soon enough. */
const HEARTBEAT_TIMEOUT_MS = 10_000;

/**
 * The Tinker API from TypeScript, as the Python SDK's `tinker.ServiceClient`: the entry to training
 * clients (LoRA adapters on a base model), samplers and the REST client, over the server's `/api/v1`
 * routes (docs/tinker.md). The session is created with the first training or sampling client and kept
 * alive by heartbeats until {@link close} (or until the process exits: the timer does not hold Node open,
 * and the server ends a session that stops beating after `tinker_session_timeout_seconds`).
 *
 * @example
 * ```ts
 * import { tinker } from '@opentinker/client';
 *
 * const service = new tinker.ServiceClient({ baseUrl: 'http://127.0.0.1:8780', apiKey: process.env.OPENTINKER_API_KEY });
 * const training = await service.createLoraTrainingClient({ baseModel: 'Qwen/Qwen2.5-0.5B-Instruct', rank: 16 });
 * const [out] = await Promise.all([training.forwardBackward(data, 'cross_entropy'), training.optimStep({ learningRate: 1e-4 })]);
 * const sampler = await training.saveWeightsAndGetSamplingClient();
 * const samples = await sampler.sample(prompt, { numSamples: 8, samplingParams: { maxTokens: 256, stop: ['\n'] } });
 * await service.close();
 * ```
 */
export class ServiceClient {
  private readonly http: TinkerHttp;
  private readonly ctx: TinkerContext;
  private session: Promise<string> | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private limits: ChunkLimits = { maxDatums: 1024, maxBytes: 5_000_000 };
  private modelSeqId = 0;
  private samplingSeqId = 0;
  private closed = false;

  constructor(
    private readonly options: ServiceClientOptions,
    http?: TinkerHttp,
  ) {
    this.http = http ?? new TinkerHttp(options);
    this.ctx = {
      http: this.http,
      onQueueState: options.onQueueState,
      sessionId: () => this.sessionId(),
      nextSamplingSessionSeqId: () => this.samplingSeqId++,
      chunkLimits: () => this.limits,
      createSamplingClient: (from, o) => this.createSamplingClient(from, o),
    };
  }

  /** The models this server trains and samples (presets, the Hub cache, model folders, your uploads). */
  async getServerCapabilities(options: { signal?: AbortSignal } = {}): Promise<Capabilities> {
    return camelize(parseAnswer(GetServerCapabilitiesResponse, await this.http.json('GET', 'get_server_capabilities', undefined, options), 'the server capabilities'));
  }

  /** The session's id (`create_session` the first time). */
  sessionId(options: { signal?: AbortSignal } = {}): Promise<string> {
    if (this.closed) return Promise.reject(new OpenTinkerError('OT_ERR_SESSION_CLOSED', 'This ServiceClient is closed; make a new one', 0, { category: 'user' }));
    // A session that could not be created is tried again by the next call.
    this.session ??= this.createSession(options.signal).catch((error: unknown) => {
      this.session = undefined;
      throw error;
    });
    return this.session;
  }

  /** A new LoRA adapter on `baseModel`, ready to train (`create_model`, then `get_info`). */
  async createLoraTrainingClient(o: LoraTrainingClientOptions): Promise<TrainingClient> {
    const sessionId = await this.sessionId(o);
    const body = {
      session_id: sessionId,
      model_seq_id: this.modelSeqId++,
      base_model: o.baseModel,
      lora_config: { rank: o.rank ?? 32, seed: o.seed ?? null, train_mlp: o.trainMlp ?? true, train_attn: o.trainAttn ?? true, train_unembed: o.trainUnembed ?? true },
      user_metadata: o.userMetadata ?? null,
      type: 'create_model',
    };
    const future = parseAnswer(UntypedAPIFuture, await this.http.json('POST', 'create_model', body, o), 'the create_model answer');
    const answer = await pollFuture(this.http, future.request_id, 'CreateModel', { signal: o.signal, onQueueState: this.options.onQueueState });
    const modelId = parseAnswer(CreateModelResponse, 'json' in answer ? answer.json : undefined, 'a create_model result').model_id;
    return this.trainingClient(modelId, o.signal);
  }

  /** A new training client from a `weights` checkpoint's adapter (its LoRA config from the checkpoint), with fresh Adam state. */
  createTrainingClientFromState(path: string, options: { signal?: AbortSignal } = {}): Promise<TrainingClient> {
    return this.fromState(path, false, options.signal);
  }

  /** A new training client from a `weights` checkpoint's adapter and Adam state: it continues where the saved one was. */
  createTrainingClientFromStateWithOptimizer(path: string, options: { signal?: AbortSignal } = {}): Promise<TrainingClient> {
    return this.fromState(path, true, options.signal);
  }

  /** A sampler of a saved sampler checkpoint (`tinker://…/sampler_weights/<name>`) or of a base model alone. */
  async createSamplingClient(from: { modelPath: string } | { baseModel: string }, options: { signal?: AbortSignal } = {}): Promise<SamplingClient> {
    const sessionId = await this.sessionId(options);
    const body = {
      session_id: sessionId,
      sampling_session_seq_id: this.samplingSeqId++,
      ...('modelPath' in from ? { model_path: from.modelPath } : { base_model: from.baseModel }),
      type: 'create_sampling_session',
    };
    const answer = parseAnswer(CreateSamplingSessionResponse, await this.http.json('POST', 'create_sampling_session', body, options), 'the create_sampling_session answer');
    return new SamplingClient(this.ctx, answer.sampling_session_id);
  }

  /** The REST client (training runs, checkpoints), with this client's server and key. */
  createRestClient(): TinkerRestClient {
    return new TinkerRestClient(this.http);
  }

  /**
   * Ends the session (`sessions/{id}/finish`): its runners stop and their samplers and unsaved adapters go;
   * saved checkpoints stay. Stops the heartbeats. Closing twice, or before a session existed, is fine.
   */
  async close(reason: 'success' | 'errored' | 'interrupted' = 'success', options: { detail?: string; signal?: AbortSignal } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopHeartbeat();
    const session = this.session;
    if (!session) return;
    const id = await session.catch(() => undefined);
    if (id === undefined) return;
    await this.http.json('POST', `sessions/${encodeURIComponent(id)}/finish`, { reason: { type: reason }, detail: options.detail ?? null }, options);
  }

  private async fromState(path: string, optimizer: boolean, signal: AbortSignal | undefined): Promise<TrainingClient> {
    const sessionId = await this.sessionId({ signal });
    const modelSeqId = this.modelSeqId++;
    const body = { session_id: sessionId, model_seq_id: modelSeqId, path, optimizer, type: 'load_weights' };
    const future = parseAnswer(UntypedAPIFuture, await this.http.json('POST', 'load_weights', body, { signal }), 'the load_weights answer');
    await pollFuture(this.http, future.request_id, 'LoadWeights', { signal, onQueueState: this.options.onQueueState });
    // The new model's id is the session's and the number given (the SDK computes it the same way).
    return this.trainingClient(`${sessionId}:train:${modelSeqId}`, signal);
  }

  /** A training client once `get_info` knows its model (as the SDK checks a new one). */
  private async trainingClient(modelId: string, signal: AbortSignal | undefined): Promise<TrainingClient> {
    const client = new TrainingClient(this.ctx, modelId);
    await client.getInfo({ signal });
    return client;
  }

  private async createSession(signal: AbortSignal | undefined): Promise<string> {
    const config = parseAnswer(ClientConfigResponse, await this.http.json('POST', 'client/config', { sdk_version: CLIENT_VERSION }, { signal }), 'the client config');
    this.limits = { maxDatums: config.fwdbwd_max_chunk_len ?? this.limits.maxDatums, maxBytes: config.fwdbwd_max_chunk_bytes_count ?? this.limits.maxBytes };
    const body = { tags: this.options.tags ?? [], user_metadata: this.options.userMetadata ?? null, sdk_version: CLIENT_VERSION, type: 'create_session' };
    const created = parseAnswer(CreateSessionResponse, await this.http.json('POST', 'create_session', body, { signal }), 'the create_session answer');
    if (!this.closed) this.startHeartbeat(created.session_id);
    return created.session_id;
  }

  private startHeartbeat(sessionId: string): void {
    const beat = async () => {
      try {
        await this.http.json('POST', 'session_heartbeat', { session_id: sessionId, type: 'session_heartbeat' }, { maxRetries: 0, timeoutMs: HEARTBEAT_TIMEOUT_MS });
      } catch (error) {
        // 410: the session is over (finished, or expired without heartbeats); as the SDK, stop beating.
        if (isOpenTinkerError(error) && error.status === 410) this.stopHeartbeat();
      }
    };
    this.heartbeat = setInterval(() => void beat(), this.options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS);
    // Node: the heartbeat alone does not keep the process alive.
    (this.heartbeat as { unref?: () => void }).unref?.();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
