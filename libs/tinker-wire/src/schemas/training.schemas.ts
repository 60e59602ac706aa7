import { z } from 'zod';
import { CheckpointName, Count, Id, MAX_ID_CHARS, OptimizerConfig, TinkerPath, UserMetadata } from './common.schemas';

/**
 * Training clients: `create_model`, `get_info`, `optim_step`, `save_weights`, `save_weights_for_sampler`,
 * `load_weights`, `save_weights_external`. `forward_backward` is protobuf (forward-backward-request.ts).
 * Every submission answers an {@link UntypedAPIFuture} (futures.schemas.ts) except `get_info`.
 */

/** Which layers get LoRA adapters, and the adapter's rank and seed. There is no alpha on the wire. */
export const LoraConfig = z.object({
  rank: z.number().int().min(1),
  seed: z.number().int().nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});
export type LoraConfig = z.output<typeof LoraConfig>;

/** `POST /api/v1/create_model` (`ServiceClient.create_lora_training_client`); `model_seq_id` counts the session's training clients from 0. */
export const CreateModelRequest = z.object({
  session_id: Id,
  model_seq_id: Count,
  base_model: z.string().min(1).max(MAX_ID_CHARS),
  lora_config: LoraConfig.nullish(),
  optimizer_config: OptimizerConfig.default({ type: 'adamw' }),
  user_metadata: UserMetadata.nullish(),
  type: z.literal('create_model').optional(),
});
export type CreateModelRequest = z.output<typeof CreateModelRequest>;

/** The future's result. The SDK (0.38) computes ids as `{session_id}:train:{model_seq_id}` for create-via-load; use that form for every model id. */
export const CreateModelResponse = z.object({ model_id: Id, type: z.literal('create_model').optional() });
export type CreateModelResponse = z.output<typeof CreateModelResponse>;

/** `POST /api/v1/get_info`: answered directly, not a future. */
export const GetInfoRequest = z.object({ model_id: Id, type: z.literal('get_info').optional() });
export type GetInfoRequest = z.output<typeof GetInfoRequest>;

/** `tokenizer_id` (else `model_name`) is what `TrainingClient.get_tokenizer()` loads with transformers on the client, after the last ':' is cut. */
export const ModelData = z.object({ arch: z.string().nullish(), model_name: z.string().nullish(), tokenizer_id: z.string().nullish() });
export type ModelData = z.output<typeof ModelData>;

export const GetInfoResponse = z.object({
  model_id: Id,
  model_data: ModelData,
  is_lora: z.boolean().nullish(),
  lora_rank: Count.nullish(),
  model_name: z.string().nullish(),
  optimizer_config: OptimizerConfig.optional(),
  type: z.literal('get_info').optional(),
});
export type GetInfoResponse = z.output<typeof GetInfoResponse>;

/** AdamW (decoupled weight decay), hyper-parameters per step; `grad_clip_norm` 0 = no clipping. Defaults are the SDK's. */
export const AdamParams = z.object({
  learning_rate: z.number().min(0).default(1e-4),
  beta1: z.number().min(0).lt(1).default(0.9),
  beta2: z.number().min(0).lt(1).default(0.95),
  eps: z.number().min(0).default(1e-12),
  weight_decay: z.number().min(0).default(0),
  grad_clip_norm: z.number().min(0).default(0),
});
export type AdamParams = z.output<typeof AdamParams>;

/** Dimuon's per-step parameters (a model created with `optimizer_config: {type: "dimuon"}`, SDK 0.30+). */
export const DimuonParams = z.object({
  type: z.literal('dimuon').default('dimuon'),
  learning_rate: z.number().min(0),
  beta1: z.number().min(0).lt(1).default(0.9),
  grad_clip_norm: z.number().min(0).default(0),
});
export type DimuonParams = z.output<typeof DimuonParams>;

/** `POST /api/v1/optim_step`: Adam's parameters under `adam_params` (every SDK), any other optimizer's under `optimizer_params` (0.30+). */
export const OptimStepRequest = z
  .object({
    model_id: Id,
    seq_id: Count.nullish(),
    adam_params: AdamParams.optional(),
    optimizer_params: DimuonParams.optional(),
    type: z.literal('optim_step').optional(),
  })
  .refine((r) => (r.adam_params === undefined) !== (r.optimizer_params === undefined), { message: 'exactly one of adam_params and optimizer_params', path: ['adam_params'] });
export type OptimStepRequest = z.output<typeof OptimStepRequest>;

/** Metric keys are free-form here (the SDK does not merge them). */
export const OptimStepResponse = z.object({ metrics: z.record(z.string(), z.number()).nullish() });
export type OptimStepResponse = z.output<typeof OptimStepResponse>;

/** What every save request carries: the model, its turn, how long to keep the checkpoint (the SDK's docs say an hour to ten years; none = forever), its metadata. */
const SAVE_FIELDS = {
  model_id: Id,
  seq_id: Count.nullish(),
  ttl_seconds: z.number().int().min(1).nullish(),
  user_metadata: z.record(z.string(), z.string()).nullish(),
};

/** `POST /api/v1/save_weights` (`TrainingClient.save_state`): LoRA weights and optimizer state under `path` (a name). */
export const SaveWeightsRequest = z.object({
  ...SAVE_FIELDS,
  path: CheckpointName.nullish(),
  overwrite: z.boolean().default(false),
  type: z.literal('save_weights').optional(),
});
export type SaveWeightsRequest = z.output<typeof SaveWeightsRequest>;

/** `path` is the checkpoint's `tinker://<model_id>/weights/<name>`. */
export const SaveWeightsResponse = z.object({ path: TinkerPath, type: z.literal('save_weights').optional() });
export type SaveWeightsResponse = z.output<typeof SaveWeightsResponse>;

/**
 * `POST /api/v1/save_weights_for_sampler`: with `path` a named sampler checkpoint
 * (`save_weights_for_sampler`), with `sampling_session_seq_id` instead an unnamed snapshot bound to a new
 * sampling session (`save_weights_and_get_sampling_client`). `kind` since 0.38.
 */
export const SaveWeightsForSamplerRequest = z
  .object({
    ...SAVE_FIELDS,
    path: CheckpointName.nullish(),
    sampling_session_seq_id: Count.nullish(),
    kind: z.enum(['snapshot', 'inflight']).default('snapshot'),
    type: z.literal('save_weights_for_sampler').optional(),
  })
  .refine((r) => (r.path == null) !== (r.sampling_session_seq_id == null), { message: 'exactly one of path and sampling_session_seq_id', path: ['path'] });
export type SaveWeightsForSamplerRequest = z.output<typeof SaveWeightsForSamplerRequest>;

/** The future's result: `path` (`tinker://<model_id>/sampler_weights/<name>`) for a named save, `sampling_session_id` for an unnamed one. */
export const SaveWeightsForSamplerResponseInternal = z.object({
  path: TinkerPath.nullish(),
  sampling_session_id: Id.nullish(),
  type: z.literal('save_weights_for_sampler').optional(),
});
export type SaveWeightsForSamplerResponseInternal = z.output<typeof SaveWeightsForSamplerResponseInternal>;

/**
 * `POST /api/v1/load_weights`, two forms. Create-via-load (`create_training_client_from_state*`: 0.38,
 * or 0.24.1+ with `create_model_via_load_weights` in the client config): `session_id` + `model_seq_id`
 * name a new model `{session_id}:train:{model_seq_id}`, its LoRA config taken from the checkpoint.
 * Legacy (`TrainingClient.load_state*`, and create_training_client_from_state otherwise, after a
 * `create_model`): `model_id` + `seq_id` load into an existing model.
 */
export const LoadWeightsRequest = z
  .object({
    path: TinkerPath,
    optimizer: z.boolean(),
    model_id: Id.nullish(),
    seq_id: Count.nullish(),
    session_id: Id.nullish(),
    model_seq_id: Count.nullish(),
    base_model: z.string().max(MAX_ID_CHARS).nullish(),
    user_metadata: UserMetadata.nullish(),
    optimizer_config: OptimizerConfig.nullish(),
    weights_access_token: z
      .string()
      .max(4 * MAX_ID_CHARS)
      .nullish(),
    type: z.literal('load_weights').optional(),
  })
  .refine((r) => (r.model_id != null) !== (r.session_id != null && r.model_seq_id != null), {
    message: 'either model_id (load into a model) or session_id and model_seq_id (create a model from the checkpoint)',
    path: ['model_id'],
  });
export type LoadWeightsRequest = z.output<typeof LoadWeightsRequest>;

export const LoadWeightsResponse = z.object({ path: z.string().nullish(), model_id: Id.nullish(), type: z.literal('load_weights').optional() });
export type LoadWeightsResponse = z.output<typeof LoadWeightsResponse>;

/** `POST /api/v1/save_weights_external` (SDK 0.28+): a Hugging Face-format export under a name. */
export const SaveWeightsExternalRequest = z.object({
  ...SAVE_FIELDS,
  path: CheckpointName,
  age_encryption_recipients: z.array(z.string()).nullish(),
  type: z.literal('save_weights_external').optional(),
});
export type SaveWeightsExternalRequest = z.output<typeof SaveWeightsExternalRequest>;

export const SaveWeightsExternalResponse = z.object({ path: TinkerPath, type: z.literal('save_weights_external').optional() });
export type SaveWeightsExternalResponse = z.output<typeof SaveWeightsExternalResponse>;
