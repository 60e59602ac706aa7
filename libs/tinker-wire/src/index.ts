/**
 * `@opentinker/tinker-wire`: the wire of the official Tinker Python SDK (`pip install tinker`, 0.22.3 to
 * 0.38.0), verified against the SDK itself. Protobuf where the SDK speaks protobuf (the forward_backward
 * request, forward/backward and sampling results), zstd bodies with caps, zod schemas for every JSON body,
 * the route table, and plain typed arrays on the server's side so nothing else handles protobuf.
 * Framework-free: no dependency on the server.
 */
export { TinkerWireError, isTinkerWireError } from './errors';
export type { TinkerWireErrorCode } from './errors';
export { decodeBody, decompressZstd, DEFAULT_BODY_LIMITS, ZSTD_WINDOW_LOG_MAX } from './body';
export type { BodyLimits } from './body';
export { tensorAsInt32, tensorAsFloat32 } from './tensor';
export type { PlainTensor, TensorDType, TensorValues, TensorInput } from './tensor';
export { decodeForwardBackwardRequest, forwardBackwardRequestToPlain, encodeForwardBackwardRequest, DEFAULT_MAX_DATUMS, DEFAULT_MAX_ELEMENTS } from './forward-backward-request';
export type {
  ForwardBackwardRequestPlain,
  ForwardBackwardDecodeOptions,
  ForwardBackwardRequestInput,
  DatumPlain,
  DatumInput,
  ModelInputChunk as ModelInputChunkPlain,
  ProvenanceSpanPlain,
} from './forward-backward-request';
export { encodeForwardBackwardOutput, decodeForwardBackwardOutput, METRIC_REDUCTIONS } from './forward-backward-output';
export type { ForwardBackwardResult, ForwardBackwardOutputPlain, ForwardBackwardEncodeOptions, OutputTensorInput } from './forward-backward-output';
export { encodeSampleResponse, decodeSampleResponse } from './sample-response';
export type { SampleResult, SampledSequenceInput, SampleResponsePlain, TopkInput, TopkPlain } from './sample-response';
export { decodeMessage } from './message';
export * as proto from './generated/tinker_pb';
export * from './schemas/common.schemas';
export * from './schemas/session.schemas';
export * from './schemas/training.schemas';
export * from './schemas/sampling.schemas';
export * from './schemas/futures.schemas';
export * from './schemas/rest.schemas';
export { TINKER_ROUTES, matchTinkerRoute } from './routes';
export type { TinkerRoute } from './routes';

/** The Content-Type of every protobuf body, both ways. */
export const PROTOBUF_CONTENT_TYPE = 'application/x-protobuf';
