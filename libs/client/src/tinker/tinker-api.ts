/**
 * The Tinker API from TypeScript (`import { tinker } from '@opentinker/client'`), named as the Python
 * SDK names it: `tinker.ServiceClient`, its training, sampling and REST clients, and the types of
 * their requests and results (`tinker.Datum`, `tinker.ModelInput.fromInts`, …). docs/tinker.md has
 * the same loop in both languages.
 */
export { ServiceClient } from './tinker-service-client';
export type { ServiceClientOptions, LoraTrainingClientOptions } from './tinker-service-client';
export { TrainingClient } from './tinker-training-client';
export type { ForwardBackwardOptions, SaveOptions, CallOptions } from './tinker-training-client';
export { SamplingClient } from './tinker-sampling-client';
export type { SampleOptions } from './tinker-sampling-client';
export { TinkerRestClient as RestClient, parseTinkerPath } from './tinker-rest-client';
export type { ListOptions, CheckpointArchiveUrl, TinkerPathParts } from './tinker-rest-client';
export type { QueueStateChange, TinkerRequestType } from './tinker-futures';
export type { TinkerHttpOptions } from './tinker-http';
export { ModelInput } from './tinker-types';
export type {
  AdamParams,
  Camelize,
  Checkpoint,
  CheckpointsListResponse,
  CreateModelResponse,
  Datum,
  EncodedTextChunk,
  ForwardBackwardOutput,
  GetInfoResponse,
  GetSamplerResponse,
  GetServerCapabilitiesResponse,
  LoadWeightsResponse,
  LossFnConfig,
  LossFnType,
  OptimStepResponse,
  OutputTensor,
  SampledSequence,
  SampleResponse,
  SamplingParams,
  SaveWeightsForSamplerResponse,
  SaveWeightsResponse,
  SupportedModel,
  TensorData,
  TopkLogprobs,
  TrainingRun,
  TrainingRunsResponse,
  WeightsInfoResponse,
} from './tinker-types';
