import { z } from 'zod';
import { AppError, ErrorCode } from '../core/app-error';
import { samplerSeed, SHARED_FIELDS, stopList } from './chat-request';
import type { CompletionPrompt, CompletionRequest } from '../rollout/sampling-schemas';

/**
 * The body of `POST /v1/completions`, OpenAI's legacy completions API (what vLLM-style clients call):
 * the prompt as text or token ids, one or several; the fields it shares with chat are chat's
 * ({@link SHARED_FIELDS}). Keys OpenAI clients send with neutral values (`presence_penalty: 0`,
 * `best_of` equal to `n`, an empty `logit_bias`, `user`) are accepted; anything
 * else unknown is refused with its name. Defaults shown in the OpenAPI document are applied by
 * {@link completionParams}.
 */
const MAX_PROMPTS = 32;
const MAX_CHOICES = 64;

const tokenIds = z
  .array(
    z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
  )
  .min(1)
  .max(1_000_000);

export const CompletionRequestDto = z
  .object({
    ...SHARED_FIELDS,
    prompt: z
      .union([z.string().max(4_000_000), z.array(z.string().max(4_000_000)).min(1).max(MAX_PROMPTS), tokenIds, z.array(tokenIds).min(1).max(MAX_PROMPTS)])
      .describe(
        `Text (tokenized with the model's tokenizer, its special tokens added as Hugging Face's tokenizers add them), token ids, or a list of either (at most ${MAX_PROMPTS}); used as it is, without a chat template`,
      ),
    stream: z.boolean().nullable().optional().describe('Server-Sent Events of `text_completion` chunks, ended by `data: [DONE]`').meta({ default: false }),
    max_tokens: z
      .number()
      .int()
      .min(0)
      .max(1_000_000)
      .nullable()
      .optional()
      .describe('New tokens per choice; 0 samples nothing (with echo: scores the prompt)')
      .meta({ default: 16 }),
    n: z
      .number()
      .int()
      .min(1)
      .max(8)
      .nullable()
      .optional()
      .describe(`Choices per prompt (choice index = prompt index · n + j; at most ${MAX_CHOICES} in all)`)
      .meta({ default: 1 }),
    best_of: z.number().int().min(1).max(8).nullable().optional().describe('Only equal to n (no choice is picked among more)'),
    logprobs: z
      .number()
      .int()
      .min(0)
      .max(5)
      .nullable()
      .optional()
      .describe(
        "Per-token log-probs (under the model at temperature 1) and this many most likely tokens at each place (OpenAI's limit, 5); the sampled token's is always in top_logprobs, so it may hold one more",
      ),
    echo: z.boolean().nullable().optional().describe('Put the prompt before each choice’s text (and its tokens’ log-probs before the sampled ones)').meta({ default: false }),
    suffix: z
      .string()
      .nullable()
      .optional()
      .refine((v) => v == null || v === '', { message: 'suffix is not supported (insertion needs a fill-in-the-middle model)' })
      .describe('Not supported: only null or empty'),
    logit_bias: z
      .record(z.string(), z.number())
      .nullable()
      .optional()
      .refine((v) => v == null || Object.keys(v).length === 0, { message: 'logit_bias is not supported (only empty)' })
      .describe('Not supported: only null or empty'),
  })
  .strict()
  .meta({ id: 'CompletionRequestDto' });

export type CompletionRequestBody = z.output<typeof CompletionRequestDto>;

export interface ParsedCompletion {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The `logprobs` asked for (null: none). */
  logprobs: number | null;
  request: CompletionRequest;
}

/** The prompts of a request, each text or token ids. */
function prompts(prompt: CompletionRequestBody['prompt']): CompletionPrompt[] {
  if (typeof prompt === 'string') return [{ text: prompt }];
  if (prompt.every((p) => typeof p === 'string')) return (prompt as string[]).map((text) => ({ text }));
  if (prompt.every((p) => typeof p === 'number')) return [{ ids: prompt as number[] }];
  return (prompt as number[][]).map((ids) => ({ ids }));
}

/** Checks what one field alone cannot say and maps a request to what the model server takes. Errors name the field. */
export function completionParams(r: CompletionRequestBody): ParsedCompletion {
  const n = r.n ?? 1;
  if (r.best_of != null && r.best_of !== n) {
    throw new AppError(ErrorCode.VALIDATION, `best_of ${r.best_of} is not supported: only equal to n (${n}); no choice is picked among more`, { field: 'best_of' });
  }
  const list = prompts(r.prompt);
  if (list.length * n > MAX_CHOICES) {
    throw new AppError(ErrorCode.VALIDATION, `${list.length} prompts × n ${n} = ${list.length * n} choices, more than ${MAX_CHOICES}`, { field: 'n' });
  }
  const stream = r.stream === true;
  const logprobs = r.logprobs ?? null;
  return {
    model: r.model,
    stream,
    includeUsage: stream && r.stream_options?.include_usage === true,
    logprobs,
    request: {
      kind: 'completion',
      prompts: list,
      n,
      temperature: r.temperature ?? 1,
      topP: r.top_p ?? 1,
      maxTokens: r.max_tokens ?? 16,
      stop: stopList(r.stop),
      seed: samplerSeed(r.seed),
      logprobs: logprobs !== null,
      topLogprobs: logprobs ?? 0,
      echo: r.echo === true,
      stream,
    },
  };
}
