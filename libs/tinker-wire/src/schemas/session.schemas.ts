import { z } from 'zod';
import { Count, Id, MAX_ID_CHARS, UserMetadata } from './common.schemas';

/**
 * Client setup and the session: `client/config`, `client/dynamic_config`, `create_session`,
 * `session_heartbeat`, `telemetry`, `sessions/{id}/finish`, `healthz`, `get_server_capabilities`.
 */

/** `POST /api/v1/client/config` and `client/dynamic_config`: the SDK's version, before anything else. */
export const ClientConfigRequest = z.object({ sdk_version: z.string().max(64) });
export type ClientConfigRequest = z.output<typeof ClientConfigRequest>;

/**
 * The client config answer: feature flags, each optional (an SDK ignores flags it does not know). The
 * three legacy flags matter to SDKs before 0.25: `proto_write_fwdbwd` and `fwd_via_fwdbwd` make 0.22.3
 * to 0.24.1 send forward_backward and forward as protobuf; `create_model_via_load_weights` makes SDKs
 * 0.24.1 to 0.36 create a training client from a checkpoint with one `load_weights` (as 0.38 always does).
 * See {@link RECOMMENDED_CLIENT_CONFIG}.
 */
export const ClientConfigResponse = z.object({
  pjwt_auth_enabled: z.boolean().optional(),
  credential_default_source: z.string().optional(),
  use_pyqwest_transport: z.boolean().optional(),
  proto_compress_fwdbwd: z.boolean().optional(),
  parallel_fwdbwd_chunks: z.boolean().optional(),
  fwdbwd_max_chunk_len: z.number().int().min(1).optional(),
  fwdbwd_max_chunk_bytes_count: z.number().int().min(1).optional(),
  fwdbwd_dispatch_bytes_semaphore_size: z.number().int().min(1).optional(),
  sample_dispatch_bytes_semaphore_size: z.number().int().min(1).optional(),
  inflight_response_bytes_semaphore_size: z.number().int().min(1).optional(),
  billing_exception_max_pause_duration_sec: z.number().int().min(0).optional(),
  sample_no_retries: z.boolean().optional(),
  sample_enable_stuck_detection: z.boolean().optional(),
  sample_max_concurrent_requests: z.number().int().min(1).optional(),
  sample_use_retrieve_futures: z.boolean().optional(),
  custom_loss_server_side: z.boolean().optional(),
  sample_join_sampling_session: z.boolean().optional(),
  proto_write_fwdbwd: z.boolean().optional(),
  fwd_via_fwdbwd: z.boolean().optional(),
  create_model_via_load_weights: z.boolean().optional(),
});
export type ClientConfigResponse = z.output<typeof ClientConfigResponse>;

/**
 * What a server that speaks only this package's wire answers to `client/config`: protobuf for every
 * SDK from 0.22.3 on, create-via-load from 0.24.1 on, no JWT exchange, and none of the opt-in endpoints
 * (`retrieve_futures`, `create_custom_loss`, `join_sampling_session`).
 */
export const RECOMMENDED_CLIENT_CONFIG: ClientConfigResponse = Object.freeze({
  pjwt_auth_enabled: false,
  proto_write_fwdbwd: true,
  fwd_via_fwdbwd: true,
  create_model_via_load_weights: true,
  sample_use_retrieve_futures: false,
  custom_loss_server_side: false,
  sample_join_sampling_session: false,
});

/** `POST /api/v1/client/dynamic_config` (SDK 0.25+; a 404 makes the SDK use its defaults). */
export const ClientDynamicConfigResponse = z.object({
  refresh_interval_sec: z.number().int().min(1).optional(),
  sample_cancel_enabled: z.boolean().optional(),
  sample_cancel_max_batch_size: z.number().int().min(1).optional(),
});
export type ClientDynamicConfigResponse = z.output<typeof ClientDynamicConfigResponse>;

/** `POST /api/v1/create_session`: tags from `$TINKER_TAGS`, the ServiceClient's metadata. */
export const CreateSessionRequest = z.object({
  tags: z.array(z.string().max(MAX_ID_CHARS)),
  user_metadata: UserMetadata.nullish(),
  sdk_version: z.string().max(64),
  project_id: z.string().max(MAX_ID_CHARS).nullish(),
  display_name: z.string().max(MAX_ID_CHARS).nullish(),
  type: z.literal('create_session').optional(),
});
export type CreateSessionRequest = z.output<typeof CreateSessionRequest>;

/** The messages are logged by the SDK at info, warning and error level. */
export const CreateSessionResponse = z.object({
  session_id: Id,
  type: z.literal('create_session').optional(),
  info_message: z.string().nullish(),
  warning_message: z.string().nullish(),
  error_message: z.string().nullish(),
});
export type CreateSessionResponse = z.output<typeof CreateSessionResponse>;

/** `POST /api/v1/session_heartbeat`, every 10 s from the first training or sampling client on; a 410 stops the loop. */
export const SessionHeartbeatRequest = z.object({ session_id: Id, type: z.literal('session_heartbeat').optional() });
export type SessionHeartbeatRequest = z.output<typeof SessionHeartbeatRequest>;

export const SessionHeartbeatResponse = z.object({ type: z.literal('session_heartbeat').optional() });
export type SessionHeartbeatResponse = z.output<typeof SessionHeartbeatResponse>;

/** `POST /api/v1/sessions/{session_id}/finish` (SDK 0.28+, `ServiceClient.close`); any 2xx, body ignored. */
export const ClientSessionFinishRequest = z.object({
  reason: z.object({ type: z.enum(['success', 'errored', 'interrupted']) }),
  detail: z
    .string()
    .max(64 * 1024)
    .nullish(),
});
export type ClientSessionFinishRequest = z.output<typeof ClientSessionFinishRequest>;

/** `POST /api/v1/telemetry` (unless `TINKER_TELEMETRY=0`): events a server may drop; failures are ignored by the SDK. */
export const TelemetrySendRequest = z.object({
  events: z.array(z.looseObject({ event: z.string().optional() })),
  platform: z.string().optional(),
  sdk_version: z.string().optional(),
  session_id: z.string().optional(),
  process_uuid: z.string().optional(),
});
export type TelemetrySendRequest = z.output<typeof TelemetrySendRequest>;

export const TelemetryResponse = z.object({ status: z.literal('accepted') });
export type TelemetryResponse = z.output<typeof TelemetryResponse>;

/** `GET /api/v1/healthz`. */
export const HealthResponse = z.object({ status: z.literal('ok') });
export type HealthResponse = z.output<typeof HealthResponse>;

export const SupportedModel = z.object({
  model_name: z.string().nullish(),
  max_context_length: Count.nullish(),
  trainable: z.boolean().nullish(),
  sampleable: z.boolean().nullish(),
});
export type SupportedModel = z.output<typeof SupportedModel>;

/** `GET /api/v1/get_server_capabilities` (ServiceClient's, and RestClient's in 0.38). */
export const GetServerCapabilitiesResponse = z.object({ supported_models: z.array(SupportedModel) });
export type GetServerCapabilitiesResponse = z.output<typeof GetServerCapabilitiesResponse>;
