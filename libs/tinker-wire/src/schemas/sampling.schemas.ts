import { z } from 'zod';
import { Count, Id, MAX_ID_CHARS, ModelInput, TensorData, TinkerPath, TokenId } from './common.schemas';

/**
 * Sampling: `create_sampling_session`, `samplers/{id}`, `asample` (also `compute_logprobs`). The result
 * of an `asample` future is protobuf (sample-response.ts).
 */

/** `POST /api/v1/create_sampling_session` (`ServiceClient.create_sampling_client`): from a sampler checkpoint path or a base model. */
export const CreateSamplingSessionRequest = z
  .object({
    session_id: Id,
    sampling_session_seq_id: Count,
    model_path: TinkerPath.nullish(),
    base_model: z.string().min(1).max(MAX_ID_CHARS).nullish(),
    type: z.literal('create_sampling_session').optional(),
  })
  .refine((r) => r.model_path != null || r.base_model != null, { message: 'model_path or base_model', path: ['model_path'] });
export type CreateSamplingSessionRequest = z.output<typeof CreateSamplingSessionRequest>;

/** Answered directly, not a future. */
export const CreateSamplingSessionResponse = z.object({ sampling_session_id: Id, type: z.literal('create_sampling_session').optional() });
export type CreateSamplingSessionResponse = z.output<typeof CreateSamplingSessionResponse>;

/** `GET /api/v1/samplers/{sampler_id}`: the SDK asks after creating a sampler from a path, to learn its base model (for the tokenizer). */
export const GetSamplerResponse = z.object({ sampler_id: Id, base_model: z.string(), model_path: z.string().nullish() });
export type GetSamplerResponse = z.output<typeof GetSamplerResponse>;

/**
 * Sampling parameters. `stop`: absent or null = stop at the model's end of sequence, `[]` = never stop,
 * one string, strings, or token ids; `top_k` -1 = off. Temperature and top_p are floats.
 */
export const SamplingParams = z.object({
  max_tokens: z.number().int().min(1).nullish(),
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
  stop: z.union([z.string(), z.array(z.string()), z.array(TokenId)]).nullish(),
  temperature: z.number().min(0).default(1),
  top_k: z.number().int().min(-1).default(-1),
  top_p: z.number().gt(0).max(1).default(1),
});
export type SamplingParams = z.output<typeof SamplingParams>;

/**
 * `POST /api/v1/asample`, with header `X-Tinker-Sampling-Backpressure: 1` (a 429 makes the SDK back off
 * and resubmit). `seq_id` counts the sampling client's requests from 0. `compute_logprobs` is a sample
 * with `num_samples` 1, `max_tokens` 1 and `prompt_logprobs`. Fields after `topk_prompt_logprobs` came
 * in later SDKs (0.27 to 0.33); an SDK that asked for `prompt_alt_tokens_k` or `prompt_logprobs_last_n`
 * fails when the answer lacks them, so a server that does not do them refuses the request.
 */
export const SampleRequest = z.object({
  sampling_session_id: Id.nullish(),
  seq_id: Count.nullish(),
  num_samples: z.number().int().min(1).default(1),
  prompt: ModelInput,
  sampling_params: SamplingParams,
  prompt_logprobs: z.boolean().nullish(),
  topk_prompt_logprobs: Count.default(0),
  topk_sample_logprobs: Count.default(0),
  target_prompt_logprobs: TensorData.nullish(),
  prompt_alt_tokens_k: Count.default(0),
  prompt_logprobs_last_n: z.number().int().min(1).nullish(),
  record_stability_info: z.boolean().nullish(),
  base_model: z.string().max(MAX_ID_CHARS).nullish(),
  model_path: TinkerPath.nullish(),
  type: z.literal('sample').optional(),
});
export type SampleRequest = z.output<typeof SampleRequest>;
