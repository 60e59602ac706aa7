/**
 * `@opentinker/env-sdk`: everything needed to write an OpenTinker environment. No dependency on the
 * server, Nest or TensorFlow.js. The conformance kit is at `@opentinker/env-sdk/testing`.
 */
/** zod, re-exported so a `configSchema` is built with the same copy the SDK validates with. */
export { z } from 'zod';
export { Message, JsonValue, JsonObject } from './messages';
export { EnvironmentError, isEnvironmentError } from './errors';
export type { EnvironmentErrorCode } from './errors';
export { API_VERSION, ENVIRONMENT_BRAND, defineEnvironment, isEnvironment, parseConfig, configJsonSchema, checkDatasetRow } from './environment';
export type { Environment, EnvironmentOptions, EnvironmentInstance, EnvironmentContext, Episode, StepResult, TaskSet, BatchStats, Split, TurnMode } from './environment';
export { RATED_RESULTS, INFO_NAME_PATTERN, SUMMARISED_INFO_KEYS, readStandardInfo, standardInfoProblem } from './step-info';
export type { StandardInfo, StepInfo, RatedResult, StandardInfoFields } from './step-info';
export { HOST_LIMITS, HOST_SETTINGS, isHostOnlyKey, datasetConfigKey } from './config-policy';
export type { ConfigPolicy, ConfigKeyPolicy, HostLimit, HostSetting } from './config-policy';
export { resolveTenantConfig } from './tenant-config';
export type { HostConfigInput } from './tenant-config';
export { DEFAULT_JSON_MAX_DEPTH, tooDeepAt, dottedPath } from './json-depth';
export { createRng } from './rng';
export type { Rng } from './rng';
export { parseTaggedAction, extractCodeBlocks, extractBoxed } from './actions';
export { maskThoughtsAndCode, thoughtRanges } from './asides';
export {
  PROTOCOL_VERSION,
  MAX_ACTION_CHARS,
  InfoResponse,
  TasksQuery,
  TasksResponse,
  CreateEpisodeRequest,
  CreateEpisodeResponse,
  StepRequest,
  StepResponse,
  StepResultSchema,
  EpisodeMessages,
  MAX_OBSERVATION_CHARS,
  ProtocolError,
  parseRequest,
  parseAnswer,
  parseResetAnswer,
  parseStepAnswer,
} from './protocol';
export { RemoteEnvironment } from './remote-environment';
export type { RemoteEnvironmentOptions } from './remote-environment';
export { OpenTinkerEnvironment, shardUrls, crc32, mergeShardStats } from './opentinker-environment';
export type { OpenTinkerEnvironmentOptions } from './opentinker-environment';
export {
  OpenTinkerHealth,
  OpenTinkerResetRequest,
  OpenTinkerResetResponse,
  OpenTinkerStepRequest,
  OpenTinkerStepResponse,
  OpenTinkerFinalizeRequest,
  OpenTinkerStatsQuery,
  OPENTINKER_RESET_KEYS,
} from './opentinker-protocol';
