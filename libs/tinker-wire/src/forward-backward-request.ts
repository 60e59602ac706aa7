import { create, toBinary } from '@bufbuild/protobuf';
import { bigintInRange, bytesOf, readInt32 } from './binary';
import { decodeBody, type BodyLimits } from './body';
import { TinkerWireError } from './errors';
import {
  ChunkSchema,
  DatumSchema,
  DmelChunkSchema,
  EncodedTextChunkSchema,
  ForwardBackwardRequestSchema,
  ImageChunkSchema,
  ImageDimensionsSchema,
  LossConfigValueSchema,
  PromptProvenanceSpanSchema,
  ProvenanceSpanSchema,
  SampledProvenanceSpanSchema,
  type ForwardBackwardRequest,
  type ProvenanceSpan,
} from './generated/tinker_pb';
import { decodeMessage } from './message';
import { zstdCompress } from './zstd';
import { ElementBudget, tensorFromProto, tensorToProto, type PlainTensor, type TensorInput } from './tensor';

/**
 * `POST /api/v1/forward_backward`: the one protobuf request body. `TrainingClient.forward_backward`
 * and, since 0.22.3 (on by default since 0.25), `TrainingClient.forward` (`forward_only`) send it.
 * {@link decodeForwardBackwardRequest} turns the bytes into plain typed arrays, so a server never
 * handles protobuf; {@link encodeForwardBackwardRequest} is the other direction, for a client.
 */

/** One chunk of a datum's model input. */
export type ModelInputChunk =
  | { type: 'encoded_text'; tokens: Int32Array }
  | { type: 'image'; data: Uint8Array; format: string; expectedTokens?: number; overrideDimensions?: { width: number; height: number } }
  | { type: 'dmel'; dmel: Uint8Array };

/** A provenance span (`Datum.with_provenance`, SDK 0.26+): a run of positions taken from a sampled sequence's prompt or its sampled tokens. */
export interface ProvenanceSpanPlain {
  kind: 'prompt' | 'sampled';
  sequenceId: string;
  offset: number;
  length: number;
}

/** One datum, with plain arrays. */
export interface DatumPlain {
  modelInput: ModelInputChunk[];
  /** The token ids of the `encoded_text` chunks, concatenated (every chunk when decoding text-only). */
  tokens: Int32Array;
  /** Named loss inputs by their wire names (`target_tokens`, `weights`, `advantages`, `logprobs`, ...); a record without a prototype. */
  lossFnInputs: Record<string, PlainTensor>;
  modelInputSpans?: ProvenanceSpanPlain[];
  lossFnInputSpans?: ProvenanceSpanPlain[];
}

/** A decoded forward/backward request. */
export interface ForwardBackwardRequestPlain {
  modelId: string;
  /** 1, 2, 3, ... per training client; the server runs one model's requests in this order. */
  seqId: number;
  lossFn: string;
  /** `loss_fn_config_v2` when the SDK sent it (0.27+: numbers and text), else the numeric `loss_fn_config`; a record without a prototype. */
  lossFnConfig: Record<string, number | string>;
  /** True for `TrainingClient.forward`: outputs only, no gradient. */
  forwardOnly: boolean;
  data: DatumPlain[];
}

/** Limits and choices for {@link decodeForwardBackwardRequest}. */
export interface ForwardBackwardDecodeOptions extends BodyLimits {
  /** The request's Content-Encoding header (`zstd` or none). */
  contentEncoding?: string | null;
  /** Most datums in one request. Default 1,024, the SDK's own chunk length (`fwdbwd_max_chunk_len` of the client config). */
  maxDatums?: number;
  /** Most tensor values in one request, counted after densifying CSR tensors. Default 16 Mi. */
  maxElements?: number;
  /** Refuse image and audio chunks (`TINKER_WIRE_UNSUPPORTED`), for a text-only engine. Default true. */
  textOnly?: boolean;
}

export const DEFAULT_MAX_DATUMS = 1024;
export const DEFAULT_MAX_ELEMENTS = 16 * 1024 * 1024;

/**
 * The body of `POST /api/v1/forward_backward` as plain arrays. Throws {@link TinkerWireError} for
 * anything that is not a sound request within the limits; never returns half a request.
 *
 * @example
 * ```ts
 * const req = decodeForwardBackwardRequest(body, { contentEncoding: headers['content-encoding'] });
 * for (const d of req.data) engine.add(d.tokens, tensorAsInt32(d.lossFnInputs.target_tokens, 'target_tokens'));
 * ```
 */
export function decodeForwardBackwardRequest(body: Uint8Array, options: ForwardBackwardDecodeOptions = {}): ForwardBackwardRequestPlain {
  const bytes = decodeBody(body, options.contentEncoding, options);
  const message = decodeMessage(ForwardBackwardRequestSchema, bytes);
  return forwardBackwardRequestToPlain(message, options);
}

/** A decoded {@link ForwardBackwardRequest} message as plain arrays (what {@link decodeForwardBackwardRequest} does after parsing). */
export function forwardBackwardRequestToPlain(message: ForwardBackwardRequest, options: ForwardBackwardDecodeOptions = {}): ForwardBackwardRequestPlain {
  const maxDatums = options.maxDatums ?? DEFAULT_MAX_DATUMS;
  const textOnly = options.textOnly ?? true;
  if (message.data.length > maxDatums) {
    throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `${message.data.length} datums, over the limit of ${maxDatums} per request`, 'data');
  }
  const budget = new ElementBudget(options.maxElements ?? DEFAULT_MAX_ELEMENTS);
  const data = message.data.map((datum, i): DatumPlain => {
    const at = `data[${i}]`;
    const modelInput = datum.modelInput.map((chunk, j) => chunkToPlain(chunk.chunk, `${at}.model_input[${j}]`, textOnly, budget));
    const texts = modelInput.filter((c) => c.type === 'encoded_text');
    const tokens = texts.length === 1 ? texts[0].tokens : concatInt32(texts.map((c) => c.tokens));
    const lossFnInputs: Record<string, PlainTensor> = Object.create(null);
    for (const [name, tensor] of Object.entries(datum.lossFnInputs)) lossFnInputs[name] = tensorFromProto(tensor, `${at}.loss_fn_inputs.${name}`, budget);
    const plain: DatumPlain = { modelInput, tokens, lossFnInputs };
    if (datum.modelInputSpans.length > 0) plain.modelInputSpans = datum.modelInputSpans.map((s, k) => spanToPlain(s, `${at}.model_input_spans[${k}]`));
    if (datum.lossFnInputSpans.length > 0) plain.lossFnInputSpans = datum.lossFnInputSpans.map((s, k) => spanToPlain(s, `${at}.loss_fn_input_spans[${k}]`));
    return plain;
  });
  const lossFnConfig: Record<string, number | string> = Object.create(null);
  const v2 = Object.entries(message.lossFnConfigV2);
  if (v2.length > 0) {
    for (const [key, value] of v2) {
      if (value.value.case === undefined) throw new TinkerWireError('TINKER_WIRE_INVALID', 'an entry holds neither a number nor text', `loss_fn_config_v2.${key}`);
      lossFnConfig[key] = value.value.value;
    }
  } else {
    for (const [key, value] of Object.entries(message.lossFnConfig)) lossFnConfig[key] = value;
  }
  return { modelId: message.modelId, seqId: message.seqId, lossFn: message.lossFn, lossFnConfig, forwardOnly: message.forwardOnly, data };
}

function chunkToPlain(chunk: ChunkOneof, field: string, textOnly: boolean, budget: ElementBudget): ModelInputChunk {
  switch (chunk.case) {
    case 'encodedText': {
      const tokens = readInt32(chunk.value.tokens, `${field}.encoded_text.tokens`);
      budget.take(tokens.length, field);
      return { type: 'encoded_text', tokens };
    }
    case 'image':
    case 'dmel':
      if (textOnly) throw new TinkerWireError('TINKER_WIRE_UNSUPPORTED', `${chunk.case} chunks are not supported: this server takes token ids only`, field);
      if (chunk.case === 'dmel') return { type: 'dmel', dmel: chunk.value.dmel };
      return {
        type: 'image',
        data: chunk.value.data,
        format: chunk.value.format,
        ...(chunk.value.expectedTokens === undefined ? {} : { expectedTokens: chunk.value.expectedTokens }),
        ...(chunk.value.overrideDimensions === undefined
          ? {}
          : { overrideDimensions: { width: chunk.value.overrideDimensions.width, height: chunk.value.overrideDimensions.height } }),
      };
    default:
      throw new TinkerWireError('TINKER_WIRE_INVALID', 'a chunk holds nothing', field);
  }
}

type ChunkOneof = ForwardBackwardRequest['data'][number]['modelInput'][number]['chunk'];

function spanToPlain(span: ProvenanceSpan, field: string): ProvenanceSpanPlain {
  const s = span.span;
  if (s.case === undefined) throw new TinkerWireError('TINKER_WIRE_INVALID', 'a span is neither prompt_tokens nor sampled_tokens', field);
  return {
    kind: s.case === 'promptTokens' ? 'prompt' : 'sampled',
    sequenceId: s.value.sequenceId,
    offset: bigintInRange(s.value.offset, `${field}.offset`, 0, Number.MAX_SAFE_INTEGER),
    length: bigintInRange(s.value.length, `${field}.length`, 0, Number.MAX_SAFE_INTEGER),
  };
}

function concatInt32(parts: Int32Array[]): Int32Array {
  const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A datum to encode: chunks (or plain token ids as one text chunk) and named loss inputs. */
export interface DatumInput {
  modelInput: ArrayLike<number> | Array<{ type: 'encoded_text'; tokens: ArrayLike<number> } | Exclude<ModelInputChunk, { type: 'encoded_text' }>>;
  lossFnInputs: Record<string, TensorInput>;
  modelInputSpans?: ProvenanceSpanPlain[];
  lossFnInputSpans?: ProvenanceSpanPlain[];
}

/** A forward/backward request to encode. */
export interface ForwardBackwardRequestInput {
  modelId: string;
  seqId: number;
  lossFn: string;
  lossFnConfig?: Record<string, number | string>;
  forwardOnly?: boolean;
  data: DatumInput[];
}

/**
 * A forward/backward request as protobuf bytes, zstd-compressed when `compress` is set (then send
 * `Content-Encoding: zstd`). Config numbers go to both config maps and text to `loss_fn_config_v2`
 * only, as SDK 0.27+ writes them.
 *
 * @example
 * ```ts
 * const body = encodeForwardBackwardRequest({ modelId, seqId: 1, lossFn: 'cross_entropy', data: [{ modelInput: [1, 2, 3], lossFnInputs: { target_tokens: { dtype: 'int64', data: [2, 3, 4] }, weights: { dtype: 'float32', data: [1, 1, 1] } } }] });
 * ```
 */
export function encodeForwardBackwardRequest(input: ForwardBackwardRequestInput, options: { compress?: boolean } = {}): Uint8Array {
  const message = create(ForwardBackwardRequestSchema, {
    modelId: input.modelId,
    seqId: input.seqId,
    lossFn: input.lossFn,
    forwardOnly: input.forwardOnly ?? false,
    data: input.data.map((datum, i) => {
      const at = `data[${i}]`;
      const chunks = isTokenList(datum.modelInput) ? [{ type: 'encoded_text' as const, tokens: datum.modelInput }] : datum.modelInput;
      const lossFnInputs: Record<string, ReturnType<typeof tensorToProto>> = {};
      for (const [name, tensor] of Object.entries(datum.lossFnInputs)) lossFnInputs[name] = tensorToProto(tensor, `${at}.loss_fn_inputs.${name}`);
      return create(DatumSchema, {
        modelInput: chunks.map((c, j) => chunkToProto(c, `${at}.model_input[${j}]`)),
        lossFnInputs,
        modelInputSpans: (datum.modelInputSpans ?? []).map(spanToProto),
        lossFnInputSpans: (datum.lossFnInputSpans ?? []).map(spanToProto),
      });
    }),
  });
  for (const [key, value] of Object.entries(input.lossFnConfig ?? {})) {
    if (typeof value === 'number') {
      message.lossFnConfig[key] = value;
      message.lossFnConfigV2[key] = create(LossConfigValueSchema, { value: { case: 'number', value } });
    } else {
      message.lossFnConfigV2[key] = create(LossConfigValueSchema, { value: { case: 'text', value } });
    }
  }
  const bytes = toBinary(ForwardBackwardRequestSchema, message);
  return options.compress ? zstdCompress(bytes) : bytes;
}

function isTokenList(value: DatumInput['modelInput']): value is ArrayLike<number> {
  return value.length === 0 || typeof (value as ArrayLike<unknown>)[0] === 'number';
}

function chunkToProto(chunk: Exclude<DatumInput['modelInput'], ArrayLike<number>>[number], field: string) {
  if (chunk.type === 'encoded_text') {
    const tokens = chunk.tokens instanceof Int32Array ? chunk.tokens : Int32Array.from(chunk.tokens);
    for (let i = 0; i < tokens.length; i++) {
      if (tokens[i] !== Number(chunk.tokens[i])) throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `token ${chunk.tokens[i]} is not an int32`, `${field}.tokens[${i}]`);
    }
    return create(ChunkSchema, { chunk: { case: 'encodedText', value: create(EncodedTextChunkSchema, { tokens: bytesOf(tokens) }) } });
  }
  if (chunk.type === 'dmel') return create(ChunkSchema, { chunk: { case: 'dmel', value: create(DmelChunkSchema, { dmel: chunk.dmel }) } });
  return create(ChunkSchema, {
    chunk: {
      case: 'image',
      value: create(ImageChunkSchema, {
        data: chunk.data,
        format: chunk.format,
        expectedTokens: chunk.expectedTokens,
        overrideDimensions: chunk.overrideDimensions ? create(ImageDimensionsSchema, chunk.overrideDimensions) : undefined,
      }),
    },
  });
}

function spanToProto(span: ProvenanceSpanPlain): ProvenanceSpan {
  const value = { sequenceId: span.sequenceId, offset: BigInt(span.offset), length: BigInt(span.length) };
  return create(ProvenanceSpanSchema, {
    span:
      span.kind === 'prompt'
        ? { case: 'promptTokens', value: create(PromptProvenanceSpanSchema, value) }
        : { case: 'sampledTokens', value: create(SampledProvenanceSpanSchema, value) },
  });
}
