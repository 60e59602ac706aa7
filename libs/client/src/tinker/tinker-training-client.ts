import {
  decodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  GetInfoResponse,
  isTinkerWireError,
  LoadWeightsResponse,
  OptimStepResponse,
  PROTOBUF_CONTENT_TYPE,
  SaveWeightsForSamplerResponseInternal,
  SaveWeightsResponse,
  UntypedAPIFuture,
  type DatumInput,
} from '@opentinker/tinker-wire';
import { OpenTinkerError } from '../errors';
import { chunkDatums, combineForwardBackwardOutputs } from './forward-backward-chunks';
import { parseAnswer, readWire, type TinkerContext } from './tinker-context';
import { detached, pollFuture, type TinkerRequestType } from './tinker-futures';
import { badResponse } from './tinker-http';
import { SamplingClient } from './tinker-sampling-client';
import {
  adamParamsToWire,
  camelize,
  datumToWire,
  forwardBackwardOutputFromWire,
  type AdamParams,
  type Datum,
  type ForwardBackwardOutput,
  type GetInfoResponse as ModelInfo,
  type LoadWeightsResponse as LoadResult,
  type LossFnConfig,
  type LossFnType,
  type OptimStepResponse as OptimResult,
  type SaveWeightsForSamplerResponse,
  type SaveWeightsResponse as SaveResult,
} from './tinker-types';

/** Options of `forward` and `forwardBackward`. */
export interface ForwardBackwardOptions {
  /** The loss's settings (clip thresholds, `beta`, …); a key the loss does not take is a 400 naming it. */
  lossFnConfig?: LossFnConfig;
  signal?: AbortSignal;
}

/** Options of the checkpoint saves. */
export interface SaveOptions {
  /** Delete the checkpoint this long after it was saved (none: keep it). */
  ttlSeconds?: number;
  userMetadata?: Record<string, string>;
  signal?: AbortSignal;
}

/** Options of every other call. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Where a submission goes and how its future is read. */
interface Submission<T> {
  route: string;
  requestType: TinkerRequestType;
  body: (seqId: number) => unknown;
  read: (json: Record<string, unknown>) => T;
  signal?: AbortSignal;
}

/**
 * One LoRA adapter on a base model, trained by the calls you make (the SDK's `TrainingClient`). Every
 * call returns at once with a promise of its result, and its requests run on the server in the order of
 * the calls (`seq_id` 1, 2, 3, …), so a loop submits `forwardBackward` and `optimStep` together and
 * awaits both. A promise you never await does not crash the process when its request fails.
 *
 * @example
 * ```ts
 * const fb = training.forwardBackward(data, 'cross_entropy');
 * const step = training.optimStep({ learningRate: 1e-4 });
 * const [out] = await Promise.all([fb, step]);
 * console.log(out.metrics['loss:sum']);
 * ```
 */
export class TrainingClient {
  private nextRequestId = 0;
  /** Submissions take turns: each goes after the one before it was answered (not its result). */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: TinkerContext,
    /** The model's id, `<session id>:train:<n>`: its training run in the REST client, and the first part of its checkpoints' paths. */
    readonly modelId: string,
  ) {}

  /** Outputs (`logprobs` of each target, `elementwise_loss`) and the loss's metrics, without a gradient. */
  forward(data: Datum[], lossFn: LossFnType, options: ForwardBackwardOptions = {}): Promise<ForwardBackwardOutput> {
    return this.forwardOrBackward(data, lossFn, options, true);
  }

  /**
   * The loss's outputs and metrics (`loss:sum`), and its gradient, added to the adapter's until the next
   * `optimStep`. Losses sum over tokens and datums. A batch larger than the server's chunk goes as
   * several requests whose results are merged as the SDK merges them.
   */
  forwardBackward(data: Datum[], lossFn: LossFnType, options: ForwardBackwardOptions = {}): Promise<ForwardBackwardOutput> {
    return this.forwardOrBackward(data, lossFn, options, false);
  }

  /** One AdamW step with these settings (the SDK's defaults for those not given); metrics `grad_norm`, `learning_rate`. */
  optimStep(adam: AdamParams, options: CallOptions = {}): Promise<OptimResult> {
    return this.submit({
      route: 'optim_step',
      requestType: 'OptimStep',
      body: (seqId) => ({ model_id: this.modelId, seq_id: seqId, adam_params: adamParamsToWire(adam), type: 'optim_step' }),
      read: (json) => camelize(parseAnswer(OptimStepResponse, json, 'an optim_step result')),
      signal: options.signal,
    });
  }

  /**
   * Saves the adapter and its Adam state as `tinker://<model id>/weights/<name>`, to resume from
   * (`loadStateWithOptimizer`, `createTrainingClientFromState`). A name already saved fails (category
   * `user`) unless `overwrite`.
   */
  saveState(name: string, options: SaveOptions & { overwrite?: boolean } = {}): Promise<SaveResult> {
    return this.submit({
      route: 'save_weights',
      requestType: 'SaveWeights',
      body: (seqId) => ({ model_id: this.modelId, seq_id: seqId, path: name, ...saveFields(options), ...(options.overwrite ? { overwrite: true } : {}), type: 'save_weights' }),
      read: (json) => camelize(parseAnswer(SaveWeightsResponse, json, 'a save_weights result')),
      signal: options.signal,
    });
  }

  /** Saves the adapter alone as `tinker://<model id>/sampler_weights/<name>`, for sampling (`createSamplingClient({ modelPath })`) and serving. */
  saveWeightsForSampler(name: string, options: SaveOptions = {}): Promise<SaveWeightsForSamplerResponse> {
    return this.submit({
      route: 'save_weights_for_sampler',
      requestType: 'SaveWeightsForSampler',
      body: (seqId) => ({ model_id: this.modelId, seq_id: seqId, path: name, ...saveFields(options), type: 'save_weights_for_sampler' }),
      read: (json) => {
        const path = parseAnswer(SaveWeightsForSamplerResponseInternal, json, 'a save_weights_for_sampler result').path;
        if (!path) throw badResponse({ url: this.ctx.http.baseUrl }, 'a named save_weights_for_sampler result has no path');
        return { path };
      },
      signal: options.signal,
    });
  }

  /**
   * A sampler of the adapter as it is now. Without a name, an unnamed snapshot that lives with the session
   * (training goes on without changing it); with one, a saved sampler checkpoint first.
   */
  async saveWeightsAndGetSamplingClient(options: SaveOptions & { name?: string } = {}): Promise<SamplingClient> {
    if (options.name !== undefined) {
      const { path } = await this.saveWeightsForSampler(options.name, options);
      return this.ctx.createSamplingClient({ modelPath: path }, options);
    }
    const id = await this.submit({
      route: 'save_weights_for_sampler',
      requestType: 'SaveWeightsForSampler',
      body: (seqId) => ({
        model_id: this.modelId,
        seq_id: seqId,
        sampling_session_seq_id: this.ctx.nextSamplingSessionSeqId(),
        ...saveFields(options),
        type: 'save_weights_for_sampler',
      }),
      read: (json) => {
        const samplerId = parseAnswer(SaveWeightsForSamplerResponseInternal, json, 'a save_weights_for_sampler result').sampling_session_id;
        if (!samplerId) throw badResponse({ url: this.ctx.http.baseUrl }, 'an unnamed save_weights_for_sampler result has no sampling_session_id');
        return samplerId;
      },
      signal: options.signal,
    });
    return new SamplingClient(this.ctx, id);
  }

  /** Loads a `weights` checkpoint's adapter into this client, keeping its Adam state. */
  loadState(path: string, options: CallOptions = {}): Promise<LoadResult> {
    return this.load(path, false, options);
  }

  /** Loads a `weights` checkpoint's adapter and Adam state into this client. */
  loadStateWithOptimizer(path: string, options: CallOptions = {}): Promise<LoadResult> {
    return this.load(path, true, options);
  }

  /** The model: its base (`modelData.modelName`), LoRA rank, and `modelData.tokenizerId` (the Hub id a tokenizer loads from). */
  async getInfo(options: CallOptions = {}): Promise<ModelInfo> {
    const answer = await this.ctx.http.json('POST', 'get_info', { model_id: this.modelId, type: 'get_info' }, options);
    return camelize(parseAnswer(GetInfoResponse, answer, 'a get_info answer'));
  }

  /** What the SDK's `get_tokenizer()` loads: the model's `tokenizer_id`, else its base's name (presets: bytes, no tokenizer to load). */
  async getTokenizerId(options: CallOptions = {}): Promise<string | undefined> {
    const info = await this.getInfo(options);
    return info.modelData.tokenizerId ?? info.modelData.modelName ?? info.modelName ?? undefined;
  }

  private load(path: string, optimizer: boolean, options: CallOptions): Promise<LoadResult> {
    return this.submit({
      route: 'load_weights',
      requestType: 'LoadWeights',
      body: (seqId) => ({ model_id: this.modelId, seq_id: seqId, path, optimizer, type: 'load_weights' }),
      read: (json) => camelize(parseAnswer(LoadWeightsResponse, json, 'a load_weights result')),
      signal: options.signal,
    });
  }

  private forwardOrBackward(data: Datum[], lossFn: LossFnType, options: ForwardBackwardOptions, forwardOnly: boolean): Promise<ForwardBackwardOutput> {
    let bodies: Uint8Array[];
    try {
      const datums = data.map((d, i) => datumToWire(d, `data[${i}]`));
      bodies = this.reserveChunks(chunkDatums(datums, this.ctx.chunkLimits()), lossFn, options.lossFnConfig, forwardOnly);
    } catch (error) {
      return Promise.reject(error);
    }
    const requestType = forwardOnly ? 'Forward' : 'ForwardBackward';
    const submitted = this.inTurn(async () => {
      const futures: UntypedAPIFuture[] = [];
      let refused: unknown;
      // Every chunk is sent even after one was refused, so the server never waits for a seq_id that never comes.
      for (const bytes of bodies) {
        try {
          const answer = await this.ctx.http.json('POST', 'forward_backward', { bytes, contentType: PROTOBUF_CONTENT_TYPE }, { signal: options.signal });
          futures.push(parseAnswer(UntypedAPIFuture, answer, 'the forward_backward answer'));
        } catch (error) {
          refused ??= error;
        }
      }
      if (refused !== undefined) throw refused;
      return futures;
    });
    return detached(
      submitted.then(async (futures) => {
        const results = await Promise.all(
          futures.map(async (f) => {
            const answer = await pollFuture(this.ctx.http, f.request_id, requestType, { signal: options.signal, onQueueState: this.ctx.onQueueState });
            if (!('protobuf' in answer)) throw badResponse({ url: this.ctx.http.baseUrl }, `a ${requestType} result came as JSON`);
            return forwardBackwardOutputFromWire(readWire(() => decodeForwardBackwardOutput(answer.protobuf), this.ctx.http.baseUrl));
          }),
        );
        return combineForwardBackwardOutputs(results);
      }),
    );
  }

  /** Each chunk's protobuf body, with the next seq_ids; nothing is reserved when one cannot be encoded. */
  private reserveChunks(chunks: DatumInput[][], lossFn: string, lossFnConfig: LossFnConfig | undefined, forwardOnly: boolean): Uint8Array[] {
    const first = this.nextRequestId;
    try {
      return chunks.map((data) => encodeForwardBackwardRequest({ modelId: this.modelId, seqId: ++this.nextRequestId, lossFn, lossFnConfig, forwardOnly, data }));
    } catch (error) {
      this.nextRequestId = first;
      if (isTinkerWireError(error)) throw new OpenTinkerError('OT_ERR_INVALID_INPUT', error.message, 0, { field: error.field, cause: error });
      throw error;
    }
  }

  /** A JSON submission with the next seq_id, in turn, then its future's result. */
  private submit<T>(s: Submission<T>): Promise<T> {
    const seqId = ++this.nextRequestId;
    const submitted = this.inTurn(async () =>
      parseAnswer(UntypedAPIFuture, await this.ctx.http.json('POST', s.route, s.body(seqId), { signal: s.signal }), `the ${s.route} answer`),
    );
    return detached(
      submitted.then(async (future) => {
        const answer = await pollFuture(this.ctx.http, future.request_id, s.requestType, { signal: s.signal, onQueueState: this.ctx.onQueueState });
        if (!('json' in answer)) throw badResponse({ url: this.ctx.http.baseUrl }, `a ${s.requestType} result came as protobuf`);
        return s.read(answer.json);
      }),
    );
  }

  private inTurn<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.turn.then(send);
    this.turn = sent.catch(() => undefined);
    return sent;
  }
}

function saveFields(options: SaveOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (options.ttlSeconds !== undefined) out.ttl_seconds = options.ttlSeconds;
  if (options.userMetadata !== undefined) out.user_metadata = options.userMetadata;
  return out;
}
