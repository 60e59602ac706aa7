import { create, toBinary } from '@bufbuild/protobuf';
import { bytesOf, readFloat32, readInt32 } from './binary';
import { TinkerWireError } from './errors';
import { PromptAltTokensSchema, SampleResponseSchema, SampledSequenceSchema, StopReason, TopkLogprobsSchema, type TopkLogprobs } from './generated/tinker_pb';
import { decodeMessage } from './message';
import { ElementBudget, tensorFromProto, tensorToProto, type PlainTensor, type TensorInput } from './tensor';

/**
 * The result of an `asample` future (`SamplingClient.sample`, `compute_logprobs`): protobuf
 * `SampleResponse`, the only form SDK 0.25+ reads. Sequence ids are not in it: they travel in the
 * submit answer (`sample_sequence_ids`, one per sample in this order, required by SDK 0.26+).
 */

/** Top-k logprobs over `length` positions: row-major `[length, k]` token ids and logprobs. */
export interface TopkInput {
  k: number;
  tokenIds: ArrayLike<number>;
  logprobs: ArrayLike<number>;
}

/** One sampled sequence. */
export interface SampledSequenceInput {
  /** `stop` when a stop token or string ended it (a stop token is the last token), `length` at max_tokens. */
  stopReason: 'stop' | 'length';
  tokens: ArrayLike<number>;
  /** The sampler's log-probability of each token, one per token (the cookbook's RL losses need them). */
  logprobs?: ArrayLike<number>;
  /** Since SDK 0.28 (`topk_sample_logprobs`): `[tokens, k]`. */
  topkLogprobs?: TopkInput;
}

/** What a server sampled for one request. */
export interface SampleResult {
  sequences: SampledSequenceInput[];
  /** One per prompt token when `prompt_logprobs` was asked; null or NaN where there is none (position 0). */
  promptLogprobs?: ArrayLike<number | null>;
  /** `[prompt length, k]` when `topk_prompt_logprobs` was asked. */
  topkPromptLogprobs?: TopkInput;
  promptCacheHitTokens?: number;
  /** Since SDK 0.30: float32 logprobs of the ids `target_prompt_logprobs` named, in its layout (dense or CSR). */
  targetPromptLogprobs?: TensorInput;
  /** Since SDK 0.31: tokens drawn at each prompt position (`prompt_alt_tokens_k`), int64 and float32 `[prompt length - 1, k]`. */
  promptAltTokens?: { tokens: TensorInput; logprobs: TensorInput };
}

/**
 * A sample result as protobuf bytes, for `retrieve_future` with `Content-Type: application/x-protobuf`.
 *
 * @example
 * ```ts
 * const bytes = encodeSampleResponse({ sequences: [{ stopReason: 'stop', tokens: [5, 151645], logprobs: [-0.25, -0.5] }], promptLogprobs: [null, -1.5] });
 * ```
 */
export function encodeSampleResponse(result: SampleResult): Uint8Array {
  const sequences = result.sequences.map((s, i) => {
    const field = `sequences[${i}]`;
    const tokens = int32Values(s.tokens, `${field}.tokens`);
    if (s.logprobs !== undefined && s.logprobs.length !== tokens.length) {
      throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${s.logprobs.length} logprobs for ${tokens.length} tokens`, `${field}.logprobs`);
    }
    return create(SampledSequenceSchema, {
      stopReason: s.stopReason === 'stop' ? StopReason.STOP : StopReason.LENGTH,
      tokens: bytesOf(tokens),
      logprobs: s.logprobs === undefined ? undefined : bytesOf(Float32Array.from(s.logprobs)),
      topkSampledLogprobs: s.topkLogprobs === undefined ? undefined : topkToProto(s.topkLogprobs, tokens.length, `${field}.topk_logprobs`),
    });
  });
  const message = create(SampleResponseSchema, {
    sequences,
    promptCacheHitTokens: result.promptCacheHitTokens ?? 0,
    promptLogprobs: result.promptLogprobs === undefined ? undefined : bytesOf(Float32Array.from(result.promptLogprobs, (v) => (v === null ? Number.NaN : v))),
    topkPromptLogprobs: result.topkPromptLogprobs === undefined ? undefined : topkToProto(result.topkPromptLogprobs, undefined, 'topk_prompt_logprobs'),
    targetPromptLogprobs: result.targetPromptLogprobs === undefined ? undefined : tensorToProto(result.targetPromptLogprobs, 'target_prompt_logprobs'),
    promptAltTokens:
      result.promptAltTokens === undefined
        ? undefined
        : create(PromptAltTokensSchema, {
            tokens: tensorToProto(result.promptAltTokens.tokens, 'prompt_alt_tokens.tokens'),
            logprobs: tensorToProto(result.promptAltTokens.logprobs, 'prompt_alt_tokens.logprobs'),
          }),
  });
  return toBinary(SampleResponseSchema, message);
}

function int32Values(values: ArrayLike<number>, field: string): Int32Array {
  const out = values instanceof Int32Array ? values : Int32Array.from(values);
  for (let i = 0; i < out.length; i++) {
    if (out[i] !== values[i]) throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${values[i]} is not an int32 token id`, `${field}[${i}]`);
  }
  return out;
}

function topkToProto(topk: TopkInput, positions: number | undefined, field: string): TopkLogprobs {
  const k = topk.k;
  if (!Number.isInteger(k) || k < 1) throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `k must be a positive integer, got ${k}`, `${field}.k`);
  const length = topk.tokenIds.length / k;
  if (!Number.isInteger(length) || topk.logprobs.length !== topk.tokenIds.length || (positions !== undefined && length !== positions)) {
    throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${topk.tokenIds.length} ids and ${topk.logprobs.length} logprobs are not [${positions ?? 'positions'}, ${k}]`, field);
  }
  return create(TopkLogprobsSchema, { k, length, tokenIds: bytesOf(int32Values(topk.tokenIds, `${field}.token_ids`)), logprobs: bytesOf(Float32Array.from(topk.logprobs)) });
}

/** Top-k logprobs read back. */
export interface TopkPlain {
  k: number;
  length: number;
  tokenIds: Int32Array;
  logprobs: Float32Array;
}

/** A sample result read back. */
export interface SampleResponsePlain {
  sequences: Array<{ stopReason: 'stop' | 'length'; tokens: Int32Array; logprobs?: Float32Array; topkLogprobs?: TopkPlain }>;
  promptLogprobs?: Float32Array;
  topkPromptLogprobs?: TopkPlain;
  promptCacheHitTokens: number;
  targetPromptLogprobs?: PlainTensor;
  promptAltTokens?: { tokens: PlainTensor; logprobs: PlainTensor };
}

/** Most values {@link decodeSampleResponse} densifies from the result's tensors. */
const MAX_RESULT_ELEMENTS = 64 * 1024 * 1024;

/**
 * Protobuf `SampleResponse` bytes read the way the SDK reads them (for a TypeScript client and tests):
 * empty logprob fields count as absent, a top-k of k or length 0 as none.
 *
 * @example
 * ```ts
 * const { sequences } = decodeSampleResponse(bytes);
 * ```
 */
export function decodeSampleResponse(bytes: Uint8Array): SampleResponsePlain {
  const message = decodeMessage(SampleResponseSchema, bytes);
  const budget = new ElementBudget(MAX_RESULT_ELEMENTS);
  const topk = (t: TopkLogprobs | undefined, field: string): TopkPlain | undefined => {
    if (t === undefined || t.k === 0 || t.length === 0) return undefined;
    const tokenIds = readInt32(t.tokenIds, `${field}.token_ids`);
    const logprobs = readFloat32(t.logprobs, `${field}.logprobs`);
    if (tokenIds.length !== t.k * t.length || logprobs.length !== tokenIds.length) {
      throw new TinkerWireError('TINKER_WIRE_INVALID', `${tokenIds.length} ids and ${logprobs.length} logprobs are not [${t.length}, ${t.k}]`, field);
    }
    return { k: t.k, length: t.length, tokenIds, logprobs };
  };
  const out: SampleResponsePlain = {
    sequences: message.sequences.map((s, i) => {
      if (s.stopReason !== StopReason.STOP && s.stopReason !== StopReason.LENGTH) {
        throw new TinkerWireError('TINKER_WIRE_INVALID', `unknown stop reason ${s.stopReason}`, `sequences[${i}].stop_reason`);
      }
      const seq: SampleResponsePlain['sequences'][number] = {
        stopReason: s.stopReason === StopReason.STOP ? 'stop' : 'length',
        tokens: readInt32(s.tokens, `sequences[${i}].tokens`),
      };
      if (s.logprobs !== undefined && s.logprobs.byteLength > 0) seq.logprobs = readFloat32(s.logprobs, `sequences[${i}].logprobs`);
      const t = topk(s.topkSampledLogprobs, `sequences[${i}].topk_sampled_logprobs`);
      if (t) seq.topkLogprobs = t;
      return seq;
    }),
    promptCacheHitTokens: message.promptCacheHitTokens,
  };
  if (message.promptLogprobs !== undefined && message.promptLogprobs.byteLength > 0) out.promptLogprobs = readFloat32(message.promptLogprobs, 'prompt_logprobs');
  const tp = topk(message.topkPromptLogprobs, 'topk_prompt_logprobs');
  if (tp) out.topkPromptLogprobs = tp;
  if (message.targetPromptLogprobs) out.targetPromptLogprobs = tensorFromProto(message.targetPromptLogprobs, 'target_prompt_logprobs', budget);
  if (message.promptAltTokens?.tokens && message.promptAltTokens.logprobs) {
    out.promptAltTokens = {
      tokens: tensorFromProto(message.promptAltTokens.tokens, 'prompt_alt_tokens.tokens', budget),
      logprobs: tensorFromProto(message.promptAltTokens.logprobs, 'prompt_alt_tokens.logprobs', budget),
    };
  }
  return out;
}
