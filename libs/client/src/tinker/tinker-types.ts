import type * as wire from '@opentinker/tinker-wire';
import type { DatumInput, ForwardBackwardOutputPlain, PlainTensor, SampleResponsePlain, TensorInput, TopkPlain } from '@opentinker/tinker-wire';
import { OpenTinkerError } from '../errors';

/**
 * The Tinker primitives' types in TypeScript's style (camelCase), and their conversions to and from
 * the wire's snake_case bodies (`@opentinker/tinker-wire`). Names follow the Python SDK's `tinker.types`.
 */

/** `a_b_c` → `aBC` at the type level. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/**
 * A wire body with camelCase keys, deeply; `userMetadata` and `metrics` stay records of what the user
 * or the server named (their keys are data, not field names).
 */
export type Camelize<T> = T extends readonly (infer U)[]
  ? Camelize<U>[]
  : T extends object
    ? { [K in keyof T as K extends string ? CamelCase<K> : K]: K extends 'user_metadata' | 'metrics' ? T[K] : Camelize<T[K]> }
    : T;

/** Keys whose values are records of user- or server-chosen names, left as they are. */
const OPAQUE_KEYS = new Set(['user_metadata', 'metrics']);

/** A JSON answer with camelCase keys (see {@link Camelize}). */
export function camelize<T>(value: T): Camelize<T> {
  if (Array.isArray(value)) return value.map((v) => camelize(v)) as Camelize<T>;
  if (value === null || typeof value !== 'object') return value as Camelize<T>;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const name = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    out[name] = OPAQUE_KEYS.has(key) ? v : camelize(v);
  }
  return out as Camelize<T>;
}

/** A text chunk of a model input: token ids. (The server is text-only: no image or audio chunks.) */
export interface EncodedTextChunk {
  type: 'encoded_text';
  tokens: number[];
}

/** A prompt or a datum's input: chunks whose tokens, in order, are the sequence. */
export interface ModelInput {
  chunks: EncodedTextChunk[];
}

/** Helpers for {@link ModelInput}, as the SDK's `ModelInput.from_ints` / `to_ints` / `length`. */
export const ModelInput = {
  /** One text chunk of these token ids. */
  fromInts(tokens: ArrayLike<number>): ModelInput {
    return { chunks: [{ type: 'encoded_text', tokens: Array.from(tokens) }] };
  },
  /** The token ids of every chunk, in order. */
  toInts(input: ModelInput): number[] {
    return input.chunks.flatMap((c) => c.tokens);
  },
  /** The number of tokens. */
  length(input: ModelInput): number {
    return input.chunks.reduce((n, c) => n + c.tokens.length, 0);
  },
};

/** A tensor as the SDK's `TensorData`: flat row-major values, their dtype and (default `[n]`) shape. */
export interface TensorData {
  data: ArrayLike<number> | BigInt64Array;
  dtype: 'int64' | 'float32';
  shape?: number[];
}

/**
 * One training example: the input (the sequence less its last token) and the loss's inputs by name, one
 * value per input position (`target_tokens[i]` is what position `i` predicts; `weights`, `advantages`,
 * `logprobs`, …). A plain array or typed array is taken as int64 for `target_tokens` and float32 for the
 * others, as the SDK converts lists.
 */
export interface Datum {
  modelInput: ModelInput | ArrayLike<number>;
  lossFnInputs: Record<string, TensorData | ArrayLike<number>>;
}

/** The built-in losses (docs/tinker.md#training-clients); a name the server does not know is a 400 naming the others. */
export type LossFnType = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'cispo' | 'dro' | 'gspo' | (string & {});

/** A loss's settings (`loss_fn_config`): clip thresholds, `beta`, …; numbers, or text for the few that take it. */
export type LossFnConfig = Record<string, number | string>;

/** A tensor of a result: dtype, dense shape and row-major values (`Float32Array` for float32). */
export type OutputTensor = PlainTensor;

/** The result of `forward` and `forwardBackward`: per datum its outputs by name (`logprobs`, `elementwise_loss`), and `name:reduction` metrics (`loss:sum`). */
export interface ForwardBackwardOutput {
  lossFnOutputType: string;
  lossFnOutputs: Array<Record<string, OutputTensor>>;
  metrics: Record<string, number>;
}

/** AdamW's settings for one `optimStep` (the SDK's `AdamParams`, with its defaults). */
export interface AdamParams {
  learningRate?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** 0: no clipping. */
  gradClipNorm?: number;
}

/** Sampling settings (the SDK's `SamplingParams`). */
export interface SamplingParams {
  /** Tokens to generate at most; unset: as many as the server's limit and the model's context allow. */
  maxTokens?: number;
  seed?: number;
  /** Unset: the model's end-of-sequence tokens; strings or token ids stop there too; `[]` never stops. */
  stop?: string | string[] | number[];
  temperature?: number;
  /** -1: off. */
  topK?: number;
  topP?: number;
}

/** One sampled sequence: its tokens (a stop token that ended it is the last), one log-prob per token, and why it ended. */
export interface SampledSequence {
  tokens: number[];
  logprobs?: number[];
  stopReason: 'stop' | 'length';
  /** The server's id of this sample (`sample_sequence_ids`). */
  sequenceId?: string;
}

/** One prompt position's most likely tokens: `[token id, log-prob]` pairs. */
export type TopkLogprobs = Array<[number, number]>;

/** The result of `sample`. */
export interface SampleResponse {
  sequences: SampledSequence[];
  /** With `includePromptLogprobs`: one per prompt token, `null` at position 0. */
  promptLogprobs?: Array<number | null>;
  /** With `topkPromptLogprobs`: per prompt position, `null` where there is none. */
  topkPromptLogprobs?: Array<TopkLogprobs | null>;
}

export type CreateModelResponse = Camelize<wire.CreateModelResponse>;
export type OptimStepResponse = Camelize<wire.OptimStepResponse>;
export type SaveWeightsResponse = Camelize<wire.SaveWeightsResponse>;
export type SaveWeightsForSamplerResponse = { path: string };
export type LoadWeightsResponse = Camelize<wire.LoadWeightsResponse>;
export type GetInfoResponse = Camelize<wire.GetInfoResponse>;
export type GetServerCapabilitiesResponse = Camelize<wire.GetServerCapabilitiesResponse>;
export type SupportedModel = Camelize<wire.SupportedModel>;
export type GetSamplerResponse = Camelize<wire.GetSamplerResponse>;
export type TrainingRun = Camelize<wire.TrainingRun>;
export type TrainingRunsResponse = Camelize<wire.TrainingRunsResponse>;
export type Checkpoint = Camelize<wire.Checkpoint>;
export type CheckpointsListResponse = Camelize<wire.CheckpointsListResponse>;
export type WeightsInfoResponse = Camelize<wire.WeightsInfoResponse>;

/** `learning_rate`, … with the SDK's defaults for what is not given. */
export function adamParamsToWire(p: AdamParams): wire.AdamParams {
  return {
    learning_rate: p.learningRate ?? 1e-4,
    beta1: p.beta1 ?? 0.9,
    beta2: p.beta2 ?? 0.95,
    eps: p.eps ?? 1e-12,
    weight_decay: p.weightDecay ?? 0,
    grad_clip_norm: p.gradClipNorm ?? 0,
  };
}

/** The wire's `sampling_params`; unset fields are left out, so the server's defaults apply. */
export function samplingParamsToWire(p: SamplingParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (p.maxTokens !== undefined) out.max_tokens = p.maxTokens;
  if (p.seed !== undefined) out.seed = p.seed;
  if (p.stop !== undefined) out.stop = p.stop;
  if (p.temperature !== undefined) out.temperature = p.temperature;
  if (p.topK !== undefined) out.top_k = p.topK;
  if (p.topP !== undefined) out.top_p = p.topP;
  return out;
}

/** A model input as the JSON body's `{chunks: [{type, tokens}]}`. */
export function modelInputToWire(input: ModelInput | ArrayLike<number>, field: string): { chunks: Array<{ type: 'encoded_text'; tokens: number[] }> } {
  const chunks = isModelInput(input) ? input.chunks : ModelInput.fromInts(input).chunks;
  return { chunks: chunks.map((c, i) => ({ type: 'encoded_text', tokens: tokenIds(c.tokens, `${field}.chunks[${i}].tokens`) })) };
}

/** A datum for the protobuf encoder: text chunks and loss inputs as tensors. */
export function datumToWire(datum: Datum, field: string): DatumInput {
  const modelInput = modelInputToWire(datum.modelInput, `${field}.model_input`).chunks;
  const lossFnInputs: Record<string, TensorInput> = {};
  for (const [name, value] of Object.entries(datum.lossFnInputs)) {
    const tensor: TensorData = isTensorData(value) ? value : { data: value, dtype: name === 'target_tokens' ? 'int64' : 'float32' };
    const size = (tensor.shape ?? [tensor.data.length]).reduce((a, b) => a * b, 1);
    if (size !== tensor.data.length) {
      throw new OpenTinkerError('OT_ERR_INVALID_INPUT', `shape [${tensor.shape?.join(', ')}] holds ${size} values, not the ${tensor.data.length} given`, 0, {
        field: `${field}.loss_fn_inputs.${name}`,
      });
    }
    lossFnInputs[name] = { dtype: tensor.dtype, data: tensor.data, shape: tensor.shape };
  }
  return { modelInput, lossFnInputs };
}

/** A forward/backward result as the SDK gives it (the decoder's plain arrays, metrics as a plain object). */
export function forwardBackwardOutputFromWire(out: ForwardBackwardOutputPlain): ForwardBackwardOutput {
  return { lossFnOutputType: out.lossFnOutputType, lossFnOutputs: out.lossFnOutputs, metrics: { ...out.metrics } };
}

/** A top-k cell the server leaves empty: `(0, -99999)`. */
const EMPTY_TOPK_LOGPROB = -99999;

/** A sample result as the SDK gives it: number arrays, NaN prompt log-probs as `null`, sequence ids attached. */
export function sampleResponseFromWire(out: SampleResponsePlain, sequenceIds: readonly string[] | null | undefined): SampleResponse {
  const response: SampleResponse = {
    sequences: out.sequences.map((s, i) => {
      const seq: SampledSequence = { tokens: Array.from(s.tokens), stopReason: s.stopReason };
      if (s.logprobs) seq.logprobs = Array.from(s.logprobs);
      const id = sequenceIds?.[i];
      if (id !== undefined) seq.sequenceId = id;
      return seq;
    }),
  };
  if (out.promptLogprobs) response.promptLogprobs = Array.from(out.promptLogprobs, (v) => (Number.isNaN(v) ? null : v));
  if (out.topkPromptLogprobs) response.topkPromptLogprobs = topkRows(out.topkPromptLogprobs);
  return response;
}

function topkRows(t: TopkPlain): Array<TopkLogprobs | null> {
  const rows: Array<TopkLogprobs | null> = [];
  for (let r = 0; r < t.length; r++) {
    const row: TopkLogprobs = [];
    for (let c = 0; c < t.k; c++) {
      const at = r * t.k + c;
      if (t.tokenIds[at] === 0 && t.logprobs[at] === EMPTY_TOPK_LOGPROB) break;
      row.push([t.tokenIds[at], t.logprobs[at]]);
    }
    rows.push(row.length === 0 ? null : row);
  }
  return rows;
}

function isModelInput(value: ModelInput | ArrayLike<number>): value is ModelInput {
  return Array.isArray((value as ModelInput).chunks);
}

function isTensorData(value: TensorData | ArrayLike<number>): value is TensorData {
  return typeof (value as TensorData).dtype === 'string' && (value as TensorData).data !== undefined;
}

/** Token ids as int32 numbers, or `OT_ERR_INVALID_INPUT` naming the first that is not one. */
function tokenIds(tokens: ArrayLike<number>, field: string): number[] {
  const out = Array.from(tokens);
  for (let i = 0; i < out.length; i++) {
    if (!Number.isInteger(out[i]) || out[i] < 0 || out[i] > 0x7fffffff) {
      throw new OpenTinkerError('OT_ERR_INVALID_INPUT', `token ${out[i]} is not a token id (an integer from 0 to 2^31 - 1)`, 0, { field: `${field}[${i}]` });
    }
  }
  return out;
}
