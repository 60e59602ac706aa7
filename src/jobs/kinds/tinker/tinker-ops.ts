import { z } from 'zod';

/*
 * The requests the Tinker API records for a tinker job's runner (`session_calls` rows: `op` and `args`),
 * and what the runner answers. Decoded from the SDK's wire at the API's edge: the runner sees these
 * plain, checked values, never protobuf. A training client is `train-<n>` and a sampler `sample-<n>`
 * inside its session (`n` is the SDK's `model_seq_id` / `sampling_session_seq_id`).
 */

/** A training client inside its session: `train-<model_seq_id>`. */
export const ModelKey = z.string().regex(/^train-\d{1,9}$/);
/** A sampler inside its session: `sample-<sampling_session_seq_id>`. */
export const SamplerKey = z.string().regex(/^sample-\d{1,9}$/);
/** A checkpoint name: what a Tinker path's last part may be here (it names a folder). */
export const CHECKPOINT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
export const CheckpointKind = z.enum(['weights', 'sampler_weights']);
export type CheckpointKind = z.output<typeof CheckpointKind>;

/** Where a saved checkpoint lives: the tinker job whose folder holds it, the training client, kind and name. */
export const CheckpointRef = z.object({ job_id: z.uuid(), model: ModelKey, kind: CheckpointKind, name: z.string().regex(CHECKPOINT_NAME) }).strict();
export type CheckpointRef = z.output<typeof CheckpointRef>;

/** `LoraConfig` (rank, which parts train, the factors' seed). */
export const OpLora = z
  .object({ rank: z.number().int().min(1), seed: z.number().int().nullable(), train_attn: z.boolean(), train_mlp: z.boolean(), train_unembed: z.boolean() })
  .strict();
export type OpLora = z.output<typeof OpLora>;

/** One datum: the input tokens and each loss input, aligned with them (1-D, one value per input token). */
export const OpDatum = z.object({ tokens: z.array(z.number().int()), inputs: z.record(z.string(), z.array(z.number())) }).strict();
export type OpDatum = z.output<typeof OpDatum>;

/** Fields of every request that takes a training client's turn. */
const turn = { model: ModelKey, seq_id: z.number().int().min(0) };

export const TINKER_OPS = {
  /** `create_model`: a fresh adapter. */
  create_model: z.object({ model: ModelKey, model_id: z.string(), lora: OpLora }).strict(),
  /** `load_weights` with `session_id`/`model_seq_id`: a new training client from a checkpoint (its LoRA config with it). */
  create_from_checkpoint: z.object({ model: ModelKey, model_id: z.string(), path: z.string(), checkpoint: CheckpointRef, optimizer: z.boolean() }).strict(),
  /** `load_weights` with `model_id`/`seq_id`: a checkpoint into an existing training client. */
  load_weights: z.object({ ...turn, model_id: z.string(), path: z.string(), checkpoint: CheckpointRef, optimizer: z.boolean() }).strict(),
  forward_backward: z
    .object({
      ...turn,
      loss_fn: z.string(),
      loss_fn_config: z.record(z.string(), z.union([z.number(), z.string()])),
      forward_only: z.boolean(),
      data: z.array(OpDatum),
    })
    .strict(),
  optim_step: z
    .object({
      ...turn,
      adam: z.object({ learning_rate: z.number(), beta1: z.number(), beta2: z.number(), eps: z.number(), weight_decay: z.number(), grad_clip_norm: z.number() }).strict(),
    })
    .strict(),
  /** `save_weights` (kind `weights`: adapter and optimizer) and `save_weights_for_sampler` with a name (`sampler_weights`: the adapter). */
  save: z
    .object({
      ...turn,
      model_id: z.string(),
      kind: CheckpointKind,
      name: z.string().regex(CHECKPOINT_NAME),
      overwrite: z.boolean(),
      ttl_seconds: z.number().int().nullable(),
      user_metadata: z.record(z.string(), z.string()).nullable(),
    })
    .strict(),
  /** `save_weights_for_sampler` without a name: an immutable snapshot bound to a new sampler. */
  snapshot: z.object({ ...turn, sampler: SamplerKey, sampling_session_id: z.string() }).strict(),
  /** A request the API refused after the SDK had numbered it: its turn passes (the SDK never sends that seq_id again). */
  skip: z.object({ ...turn, error: z.string() }).strict(),
  sample: z
    .object({
      sampler: SamplerKey,
      /** What the sampler samples with: the base alone, a snapshot taken by `snapshot`, or a saved checkpoint. */
      source: z.discriminatedUnion('type', [
        z.object({ type: z.literal('base') }).strict(),
        z.object({ type: z.literal('snapshot'), model: ModelKey }).strict(),
        z.object({ type: z.literal('checkpoint'), checkpoint: CheckpointRef }).strict(),
      ]),
      prompt: z.array(z.number().int()),
      num_samples: z.number().int().min(1),
      max_tokens: z.number().int().min(1).nullable(),
      seed: z.number().int().nullable(),
      /** null: the model's end-of-sequence tokens; [] never stops. */
      stop_tokens: z.array(z.number().int()).nullable(),
      /** Token ids that stop besides those of `stop_tokens`. */
      extra_stop_tokens: z.array(z.number().int()),
      stop_strings: z.array(z.string()),
      temperature: z.number().min(0),
      top_k: z.number().int(),
      top_p: z.number(),
      prompt_logprobs: z.boolean(),
      topk_prompt_logprobs: z.number().int().min(0),
    })
    .strict(),
  /** The session finished or expired: the runner fails what is left and exits. */
  close: z.object({ reason: z.string() }).strict(),
} as const;

export type TinkerOp = keyof typeof TINKER_OPS;
export type TinkerOpArgs<O extends TinkerOp> = z.output<(typeof TINKER_OPS)[O]>;

/** Ops that take a training client's turn (`seq_id`): run in that order per client. */
export const TURN_OPS: readonly TinkerOp[] = ['load_weights', 'forward_backward', 'optim_step', 'save', 'snapshot', 'skip'];

/** The runner's answers, by op (stored as the call's result). */
export interface TinkerResults {
  create_model: { lora_rank: number };
  create_from_checkpoint: { lora_rank: number };
  load_weights: Record<string, never>;
  forward_backward: { outputs: Array<{ logprobs: number[]; elementwise_loss: number[] }>; metrics: Record<string, number> };
  optim_step: { metrics: Record<string, number> };
  save: Record<string, never>;
  snapshot: Record<string, never>;
  skip: Record<string, never>;
  sample: {
    sequences: Array<{ tokens: number[]; logprobs: number[]; stop_reason: 'stop' | 'length' }>;
    /** One per prompt token; null where there is none (position 0). */
    prompt_logprobs?: Array<number | null>;
    topk_prompt_logprobs?: { k: number; token_ids: number[]; logprobs: number[] };
  };
  close: Record<string, never>;
}

/**
 * A failed request's error as the runner reports it: `user:` marks the caller's mistake (the SDK's
 * future fails with `category: "user"`), anything else is the server's.
 */
export const USER_ERROR_PREFIX = 'user: ';

export function userError(message: string): Error {
  return new Error(USER_ERROR_PREFIX + message);
}
