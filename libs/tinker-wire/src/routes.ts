import type { z } from 'zod';
import { FutureRetrieveRequest, CancelFutureRequest, UntypedAPIFuture, JSON_FUTURE_RESULTS } from './schemas/futures.schemas';
import { CheckpointsListResponse, ListQuery, TrainingRun, TrainingRunsResponse, WeightsInfoRequest, WeightsInfoResponse } from './schemas/rest.schemas';
import { CreateSamplingSessionRequest, CreateSamplingSessionResponse, GetSamplerResponse, SampleRequest } from './schemas/sampling.schemas';
import {
  ClientConfigRequest,
  ClientConfigResponse,
  ClientDynamicConfigResponse,
  ClientSessionFinishRequest,
  CreateSessionRequest,
  CreateSessionResponse,
  GetServerCapabilitiesResponse,
  HealthResponse,
  SessionHeartbeatRequest,
  SessionHeartbeatResponse,
  TelemetryResponse,
  TelemetrySendRequest,
} from './schemas/session.schemas';
import {
  CreateModelRequest,
  GetInfoRequest,
  GetInfoResponse,
  LoadWeightsRequest,
  OptimStepRequest,
  SaveWeightsExternalRequest,
  SaveWeightsForSamplerRequest,
  SaveWeightsRequest,
} from './schemas/training.schemas';

/**
 * Every route the SDK (0.22.3 to 0.38.0) and its RestClient call on a server that leaves the opt-in
 * features off, as verified against the SDK (test/fixtures/tinker/sdk-*.json). Paths are under the base
 * URL; `:name` is a path parameter (`:checkpoint` is `weights/<name>` or `sampler_weights/<name>`, so it
 * holds a `/`). Model and sampler ids contain `:` and travel unescaped.
 */
export interface TinkerRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** The SDK methods that call it. */
  calledBy: string[];
  /** The first SDK release that calls it, when later than 0.22.3. */
  since?: string;
  /** `json`, `protobuf` (forward_backward only) or `none`; GET query parameters in `query`. */
  body: 'json' | 'protobuf' | 'none';
  request?: z.ZodType;
  query?: z.ZodType;
  /** The direct answer. Submissions answer an {@link UntypedAPIFuture}, whose result is `result`. */
  response?: z.ZodType;
  /** For a future: its JSON result schema, or the protobuf message of its result. */
  result?: z.ZodType | 'ForwardBackwardOutput' | 'SampleResponse';
  /** Needed by a server the SDK's training and sampling loops run against. */
  required: boolean;
}

export const TINKER_ROUTES: readonly TinkerRoute[] = [
  { method: 'POST', path: '/api/v1/client/config', calledBy: ['every client, first'], body: 'json', request: ClientConfigRequest, response: ClientConfigResponse, required: true },
  {
    method: 'POST',
    path: '/api/v1/client/dynamic_config',
    calledBy: ['every client, then every refresh_interval_sec'],
    since: '0.25.0',
    body: 'json',
    request: ClientConfigRequest,
    response: ClientDynamicConfigResponse,
    required: false,
  },
  { method: 'GET', path: '/api/v1/healthz', calledBy: [], body: 'none', response: HealthResponse, required: false },
  {
    method: 'GET',
    path: '/api/v1/get_server_capabilities',
    calledBy: ['ServiceClient.get_server_capabilities', 'RestClient.get_server_capabilities (0.38)'],
    body: 'none',
    response: GetServerCapabilitiesResponse,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/create_session',
    calledBy: ['the first training or sampling client'],
    body: 'json',
    request: CreateSessionRequest,
    response: CreateSessionResponse,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/session_heartbeat',
    calledBy: ['every 10 s after create_session'],
    body: 'json',
    request: SessionHeartbeatRequest,
    response: SessionHeartbeatResponse,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/telemetry',
    calledBy: ['background, unless TINKER_TELEMETRY=0'],
    body: 'json',
    request: TelemetrySendRequest,
    response: TelemetryResponse,
    required: false,
  },
  {
    method: 'POST',
    path: '/api/v1/sessions/:session_id/finish',
    calledBy: ['ServiceClient.close'],
    since: '0.28.0',
    body: 'json',
    request: ClientSessionFinishRequest,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/create_model',
    calledBy: ['ServiceClient.create_lora_training_client', 'create_training_client_from_state* (before 0.38 without create_model_via_load_weights)'],
    body: 'json',
    request: CreateModelRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.CreateModel,
    required: true,
  },
  { method: 'POST', path: '/api/v1/get_info', calledBy: ['every new training client'], body: 'json', request: GetInfoRequest, response: GetInfoResponse, required: true },
  {
    method: 'POST',
    path: '/api/v1/forward_backward',
    calledBy: ['TrainingClient.forward_backward', 'TrainingClient.forward (forward_only)', 'TrainingClient.forward_backward_custom'],
    body: 'protobuf',
    response: UntypedAPIFuture,
    result: 'ForwardBackwardOutput',
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/optim_step',
    calledBy: ['TrainingClient.optim_step'],
    body: 'json',
    request: OptimStepRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.OptimStep,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/save_weights',
    calledBy: ['TrainingClient.save_state'],
    body: 'json',
    request: SaveWeightsRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.SaveWeights,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/save_weights_for_sampler',
    calledBy: ['TrainingClient.save_weights_for_sampler', 'TrainingClient.save_weights_and_get_sampling_client'],
    body: 'json',
    request: SaveWeightsForSamplerRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.SaveWeightsForSampler,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/load_weights',
    calledBy: ['ServiceClient.create_training_client_from_state*', 'TrainingClient.load_state*'],
    body: 'json',
    request: LoadWeightsRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.LoadWeights,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/save_weights_external',
    calledBy: ['TrainingClient.save_weights_external'],
    since: '0.28.0',
    body: 'json',
    request: SaveWeightsExternalRequest,
    response: UntypedAPIFuture,
    result: JSON_FUTURE_RESULTS.SaveWeightsExternal,
    required: false,
  },
  {
    method: 'POST',
    path: '/api/v1/create_sampling_session',
    calledBy: ['ServiceClient.create_sampling_client', 'TrainingClient.create_sampling_client'],
    body: 'json',
    request: CreateSamplingSessionRequest,
    response: CreateSamplingSessionResponse,
    required: true,
  },
  {
    method: 'GET',
    path: '/api/v1/samplers/:sampler_id',
    calledBy: ['create_sampling_client from a path', 'RestClient.get_sampler'],
    body: 'none',
    response: GetSamplerResponse,
    required: true,
  },
  {
    method: 'POST',
    path: '/api/v1/asample',
    calledBy: ['SamplingClient.sample', 'SamplingClient.compute_logprobs'],
    body: 'json',
    request: SampleRequest,
    response: UntypedAPIFuture,
    result: 'SampleResponse',
    required: true,
  },
  { method: 'POST', path: '/api/v1/retrieve_future', calledBy: ['every future, until done'], body: 'json', request: FutureRetrieveRequest, required: true },
  {
    method: 'POST',
    path: '/api/v1/cancel_future',
    calledBy: ['an abandoned sample, when sample_cancel_enabled'],
    since: '0.26.0',
    body: 'json',
    request: CancelFutureRequest,
    required: false,
  },
  {
    method: 'POST',
    path: '/api/v1/weights_info',
    calledBy: ['RestClient.get_weights_info_by_tinker_path', 'create_training_client_from_state* (before 0.38, without the flag)'],
    body: 'json',
    request: WeightsInfoRequest,
    response: WeightsInfoResponse,
    required: true,
  },
  { method: 'GET', path: '/api/v1/training_runs', calledBy: ['RestClient.list_training_runs'], body: 'none', query: ListQuery, response: TrainingRunsResponse, required: false },
  {
    method: 'GET',
    path: '/api/v1/training_runs/:training_run_id',
    calledBy: ['RestClient.get_training_run', 'RestClient.get_training_run_by_tinker_path'],
    body: 'none',
    query: ListQuery,
    response: TrainingRun,
    required: false,
  },
  {
    method: 'GET',
    path: '/api/v1/training_runs/:training_run_id/checkpoints',
    calledBy: ['RestClient.list_checkpoints'],
    body: 'none',
    response: CheckpointsListResponse,
    required: true,
  },
  {
    method: 'DELETE',
    path: '/api/v1/training_runs/:training_run_id/checkpoints/:checkpoint',
    calledBy: ['RestClient.delete_checkpoint', 'RestClient.delete_checkpoint_from_tinker_path'],
    body: 'none',
    required: false,
  },
  {
    method: 'GET',
    path: '/api/v1/checkpoints',
    calledBy: ['RestClient.list_user_checkpoints'],
    body: 'none',
    query: ListQuery,
    response: CheckpointsListResponse,
    required: false,
  },
];

/**
 * The route a request's method and path (without query) is for, with its path parameters, or undefined.
 * `:checkpoint` takes the rest of the path (`weights/<name>`).
 *
 * @example
 * ```ts
 * matchTinkerRoute('DELETE', '/api/v1/training_runs/s:train:0/checkpoints/weights/final')?.params.checkpoint; // 'weights/final'
 * ```
 */
export function matchTinkerRoute(method: string, path: string): { route: TinkerRoute; params: Record<string, string> } | undefined {
  for (const route of TINKER_ROUTES) {
    if (route.method !== method) continue;
    const names: string[] = [];
    const pattern = route.path.replace(/:([a-z_]+)/g, (_, name: string) => {
      names.push(name);
      return name === 'checkpoint' ? '((?:weights|sampler_weights|external_weights)/[^/]+)' : '([^/]+)';
    });
    const m = new RegExp(`^${pattern}$`).exec(path);
    if (!m) continue;
    const params: Record<string, string> = Object.create(null);
    try {
      names.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1])));
    } catch {
      return undefined; // a malformed %-escape names no resource
    }
    return { route, params };
  }
  return undefined;
}
