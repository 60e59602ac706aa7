import { z } from 'zod';
import { CheckpointKind, CheckpointRef, CHECKPOINT_NAME, ModelKey } from '../../rollout/tinker-checkpoint-files';
import { USER_ERROR_PREFIX } from '../../runner/runner-protocol';

/*
 * The requests the Tinker API records for a tinker job's runner (`session_calls` rows: `op` and `args`),
 * and what the runner answers. Decoded from the SDK's wire at the API's edge: the runner sees these
 * plain, checked values, never protobuf. A training client is `train-<n>` and a sampler `sample-<n>`
 * inside its session (`n` is the SDK's `model_seq_id` / `sampling_session_seq_id`).
 */

/** A sampler inside its session: `sample-<sampling_session_seq_id>`. */
export const SamplerKey = z.string().regex(/^sample-\d{1,9}$/);

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

const request = <O extends TinkerOp>(op: O) => z.object({ op: z.literal(op), args: TINKER_OPS[op] }).strict();

/** A recorded request as the runner takes it off the call relay: parsed on receipt, its `args` by its `op`. */
export const TinkerRequest = z.discriminatedUnion('op', [
  request('create_model'),
  request('create_from_checkpoint'),
  request('load_weights'),
  request('forward_backward'),
  request('optim_step'),
  request('save'),
  request('snapshot'),
  request('skip'),
  request('sample'),
  request('close'),
]);
export type TinkerRequest = z.output<typeof TinkerRequest>;

/** Ops that take a training client's turn (`seq_id`): run in that order per client. */
export const TURN_OPS = ['load_weights', 'forward_backward', 'optim_step', 'save', 'snapshot', 'skip'] as const satisfies readonly TinkerOp[];
export type TurnRequest = Extract<TinkerRequest, { op: (typeof TURN_OPS)[number] }>;

export function isTurnRequest(r: TinkerRequest): r is TurnRequest {
  return (TURN_OPS as readonly TinkerOp[]).includes(r.op);
}

/**
 * A float the runner computed: JSON has no NaN or infinities, so those travel (and are stored) as null,
 * read back as NaN (what the protobuf answers carry).
 */
const Float = z
  .number()
  .nullable()
  .transform((v) => v ?? NaN);
const Metrics = z.record(z.string(), Float);
const Empty = z.object({}).strict();

/** The runner's answers, by op (stored as the call's result, parsed again where the API reads them). */
export const TINKER_RESULTS = {
  create_model: z.object({ lora_rank: z.number().int() }).strict(),
  create_from_checkpoint: z.object({ lora_rank: z.number().int() }).strict(),
  load_weights: Empty,
  forward_backward: z.object({ outputs: z.array(z.object({ logprobs: z.array(Float), elementwise_loss: z.array(Float) }).strict()), metrics: Metrics }).strict(),
  optim_step: z.object({ metrics: Metrics }).strict(),
  save: Empty,
  snapshot: Empty,
  skip: Empty,
  sample: z
    .object({
      sequences: z.array(z.object({ tokens: z.array(z.number().int()), logprobs: z.array(Float), stop_reason: z.enum(['stop', 'length']) }).strict()),
      /** One per prompt token; null where there is none (position 0). */
      prompt_logprobs: z.array(z.number().nullable()).optional(),
      topk_prompt_logprobs: z
        .object({ k: z.number().int(), token_ids: z.array(z.number().int()), logprobs: z.array(Float) })
        .strict()
        .optional(),
    })
    .strict(),
  close: Empty,
} as const satisfies Record<TinkerOp, z.ZodType>;
export type TinkerResults = { [O in TinkerOp]: z.input<(typeof TINKER_RESULTS)[O]> };

const answered = <O extends TinkerOp>(op: O) => z.object({ op: z.literal(op), args: TINKER_OPS[op], result: TINKER_RESULTS[op] }).strict();

/** A request with the runner's answer, as the API reads a finished call back: both parsed by the request's `op`. */
export const TinkerAnswered = z.discriminatedUnion('op', [
  answered('create_model'),
  answered('create_from_checkpoint'),
  answered('load_weights'),
  answered('forward_backward'),
  answered('optim_step'),
  answered('save'),
  answered('snapshot'),
  answered('skip'),
  answered('sample'),
  answered('close'),
]);
export type TinkerAnswered = z.output<typeof TinkerAnswered>;

/** A failed request's error as the runner reports it when it is the caller's mistake (see {@link USER_ERROR_PREFIX}). */
export function userError(message: string): Error {
  return new Error(USER_ERROR_PREFIX + message);
}
