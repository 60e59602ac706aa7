import { z } from 'zod';
import { Count, Id, OptimizerConfig, TinkerPath } from './common.schemas';

/**
 * The REST plane (`RestClient`, also used by `create_training_client_from_state` before 0.38): training
 * runs (a training run is a model id), their checkpoints, weights info. Timestamps are ISO 8601.
 */

const Timestamp = z.iso.datetime({ offset: true });

export const Cursor = z.object({ offset: Count, limit: Count, total_count: Count });
export type Cursor = z.output<typeof Cursor>;

/** `checkpoint_id` is `weights/<name>`, `sampler_weights/<name>` or `external_weights/<name>`. */
export const Checkpoint = z.object({
  checkpoint_id: z.string().regex(/^(weights|sampler_weights|external_weights)\/[^/]+$/),
  checkpoint_type: z.enum(['training', 'sampler', 'external']),
  time: Timestamp,
  tinker_path: TinkerPath,
  size_bytes: Count.nullish(),
  public: z.boolean().default(false),
  user_metadata: z.record(z.string(), z.string()).nullish(),
  expires_at: Timestamp.nullish(),
});
export type Checkpoint = z.output<typeof Checkpoint>;

/** `GET /api/v1/training_runs/{id}/checkpoints` and `GET /api/v1/checkpoints?limit&offset`. */
export const CheckpointsListResponse = z.object({ checkpoints: z.array(Checkpoint), cursor: Cursor.nullish() });
export type CheckpointsListResponse = z.output<typeof CheckpointsListResponse>;

/** `GET /api/v1/training_runs/{id}?access_scope=owned`. */
export const TrainingRun = z.object({
  training_run_id: Id,
  base_model: z.string(),
  model_owner: z.string(),
  is_lora: z.boolean(),
  corrupted: z.boolean().default(false),
  lora_rank: Count.nullish(),
  last_request_time: Timestamp,
  last_checkpoint: Checkpoint.nullish(),
  last_sampler_checkpoint: Checkpoint.nullish(),
  user_metadata: z.record(z.string(), z.string()).nullish(),
});
export type TrainingRun = z.output<typeof TrainingRun>;

/** `GET /api/v1/training_runs?limit=20&offset=0&access_scope=owned`. */
export const TrainingRunsResponse = z.object({ training_runs: z.array(TrainingRun), cursor: Cursor });
export type TrainingRunsResponse = z.output<typeof TrainingRunsResponse>;

/** The query of the listing routes, as the SDK sends it (strings). */
export const ListQuery = z.object({
  limit: z.coerce.number().int().min(0).max(10_000).optional(),
  offset: z.coerce.number().int().min(0).optional(),
  access_scope: z.enum(['owned', 'accessible']).optional(),
});
export type ListQuery = z.output<typeof ListQuery>;

/** `POST /api/v1/weights_info` (`RestClient.get_weights_info_by_tinker_path`). */
export const WeightsInfoRequest = z.object({ tinker_path: TinkerPath });
export type WeightsInfoRequest = z.output<typeof WeightsInfoRequest>;

/** Before 0.38 without `create_model_via_load_weights`, `create_training_client_from_state` creates the new model from this LoRA config. */
export const WeightsInfoResponse = z.object({
  base_model: z.string(),
  is_lora: z.boolean(),
  lora_rank: Count.nullish(),
  train_unembed: z.boolean().nullish(),
  train_mlp: z.boolean().nullish(),
  train_attn: z.boolean().nullish(),
  optimizer_config: OptimizerConfig.optional(),
});
export type WeightsInfoResponse = z.output<typeof WeightsInfoResponse>;
