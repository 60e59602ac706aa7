import { z } from 'zod';

/**
 * Pieces the JSON bodies share. Every request schema is an object that drops keys it does not name, as
 * the SDK's own response models ignore unknown fields: a newer SDK's optional additions must not break a
 * server written against these. Values are checked for what the wire allows; limits that are a server's
 * choice (a largest rank, most samples) are the server's to check.
 */

/** Longest id or name accepted (session, model, request, sampler ids; checkpoint names). */
export const MAX_ID_CHARS = 512;

/** A server-issued id: session, model (`{session}:train:{n}`), request, sampling session. */
export const Id = z.string().min(1).max(MAX_ID_CHARS);

/** A non-negative integer that fits the SDK's counters. */
export const Count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A token id (int32 on the protobuf wire, so at most 2^31 - 1). */
export const TokenId = z.number().int().min(0).max(0x7fffffff);

/** `user_metadata`: string values (the SDK types it `dict[str, str]` on checkpoints, `dict[str, Any]` on models and sessions). */
export const UserMetadata = z.record(z.string().max(MAX_ID_CHARS), z.unknown());

/**
 * A checkpoint name as `save_state` / `save_weights_for_sampler` send it in `path`. Tinker paths are
 * `tinker://<training run>/<kind>/<name>` with exactly three parts, so a name has no `/`; control
 * characters are refused too.
 */
export const CheckpointName = z
  .string()
  .min(1)
  .max(MAX_ID_CHARS)
  .regex(/^[^/\u0000-\u001f\u007f]+$/, 'a checkpoint name has no "/" and no control characters');

/** A `tinker://<training run>/<weights|sampler_weights|external_weights>/<name>` path, as the SDK parses it. */
export const TinkerPath = z
  .string()
  .max(4 * MAX_ID_CHARS)
  .regex(/^tinker:\/\/[^/]+\/(weights|sampler_weights|external_weights)\/[^/]+$/, 'a tinker path is tinker://<training run>/<weights|sampler_weights|external_weights>/<name>');

/** `TensorData` in JSON (only `SampleRequest.target_prompt_logprobs` carries one): flat values, dtype, shape, optional CSR layout. */
export const TensorData = z
  .object({
    data: z.array(z.number()),
    dtype: z.enum(['int64', 'float32']),
    shape: z.array(Count).nullish(),
    sparse_crow_indices: z.array(Count).nullish(),
    sparse_col_indices: z.array(Count).nullish(),
  })
  .refine((t) => (t.sparse_crow_indices == null) === (t.sparse_col_indices == null), {
    message: 'sparse_crow_indices and sparse_col_indices come together',
    path: ['sparse_col_indices'],
  });
export type TensorData = z.output<typeof TensorData>;

export const EncodedTextChunk = z.object({ type: z.literal('encoded_text'), tokens: z.array(TokenId) });
export type EncodedTextChunk = z.output<typeof EncodedTextChunk>;

/** `data` is base64 in JSON. */
export const ImageChunk = z.object({ type: z.literal('image'), data: z.base64(), format: z.enum(['png', 'jpeg']), expected_tokens: Count.nullish() });
export type ImageChunk = z.output<typeof ImageChunk>;

export const ImageAssetPointerChunk = z.object({ type: z.literal('image_asset_pointer'), location: z.string(), format: z.enum(['png', 'jpeg']), expected_tokens: Count.nullish() });
export type ImageAssetPointerChunk = z.output<typeof ImageAssetPointerChunk>;

/** `dmel` is base64 in JSON (SDK 0.23+). */
export const DmelChunk = z.object({ type: z.literal('dmel'), dmel: z.base64() });
export type DmelChunk = z.output<typeof DmelChunk>;

export const ModelInputChunk = z.discriminatedUnion('type', [EncodedTextChunk, ImageChunk, ImageAssetPointerChunk, DmelChunk]);
export type ModelInputChunk = z.output<typeof ModelInputChunk>;

/** A prompt: chunks whose tokens, in order, are the sequence. */
export const ModelInput = z.object({ chunks: z.array(ModelInputChunk) });
export type ModelInput = z.output<typeof ModelInput>;

/** The optimizer a model is created with, fixed for its life (`optimizer_config`, SDK 0.30+; Adam before). */
export const OptimizerConfig = z.discriminatedUnion('type', [z.object({ type: z.literal('adamw') }), z.object({ type: z.literal('dimuon'), version: z.literal(1).default(1) })]);
export type OptimizerConfig = z.output<typeof OptimizerConfig>;
