import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { AppError, ErrorCode } from '../core/app-error';
import type { GenerateRequest } from '../rollout/sampling-schemas';

/**
 * The body of `POST /v1/chat/completions`, as OpenAI defines it, minus what a plain language model
 * checkpoint cannot do (tools, response formats, penalties). Keys OpenAI clients send with neutral
 * values (`presence_penalty: 0`, `user`, `stream_options`) are accepted; anything else unknown is
 * refused with its name, so a request never silently means less than it says. Defaults shown in the
 * OpenAPI document are applied by {@link chatParams}.
 */
const textPart = z.object({ type: z.literal('text'), text: z.string() }).strict();
const ChatMessageDto = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: z
      .union([z.string(), z.array(textPart).max(256)])
      .nullable()
      .describe('Text, or text parts (joined); null only for an assistant message'),
    name: z.string().max(256).optional(),
    tool_call_id: z.string().max(256).optional(),
  })
  .strict()
  .meta({ id: 'ChatMessageDto' });

const zeroOnly = (what: string) =>
  z
    .number()
    .optional()
    .refine((v) => v === undefined || v === 0, { message: `${what} is not supported (only 0)` })
    .describe('Only 0');

/** What `model` may name, on the chat and completion routes. */
export const MODEL_NAME_DOC =
  'A checkpoint: `job:<job id>` (its latest), `job:<job id>/step-<n>` (both also without `job:`), or a job name unique among your jobs (optionally `/step-<n>`); ' +
  'a model folder you uploaded: `model:<id>`; ' +
  "or a Hugging Face model in the server's Hub cache: `hf:Org/Name` (its main branch) or `hf:Org/Name@<revision>` (branch, tag or commit)";

/** The fields chat and completions share, as OpenAI defines them for both. */
export const SHARED_FIELDS = {
  model: z.string().min(1).max(300).describe(MODEL_NAME_DOC).meta({ example: 'job:4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00/step-20' }),
  stream_options: z
    .object({ include_usage: z.boolean().optional().describe('Send a last chunk with `usage` (and `usage: null` on the others)') })
    .strict()
    .meta({ id: 'StreamOptionsDto' })
    .nullable()
    .optional(),
  temperature: z.number().min(0).max(2).nullable().optional().describe('0 = greedy').meta({ default: 1 }),
  top_p: z.number().gt(0).max(1).nullable().optional().meta({ default: 1 }),
  stop: z
    .union([z.string().min(1).max(256), z.array(z.string().min(1).max(256)).max(16)])
    .nullable()
    .optional()
    .describe('Stop strings (not included in the answer)'),
  seed: z
    .number()
    .int()
    .min(-(2 ** 31))
    .max(2 ** 32 - 1)
    .nullable()
    .optional()
    .describe('Same seed, same request, same model: same answer'),
  presence_penalty: zeroOnly('presence_penalty'),
  frequency_penalty: zeroOnly('frequency_penalty'),
  user: z.string().max(256).optional().describe('Accepted and ignored'),
};

/** A request's `stop` as a list. */
export function stopList(stop: string | string[] | null | undefined): string[] {
  return stop == null ? [] : typeof stop === 'string' ? [stop] : stop;
}

/** A request's `seed` as the sampler takes it: without one the draws differ per request, as with OpenAI's API; with one they repeat. */
export function samplerSeed(seed: number | null | undefined): number {
  return seed == null ? randomInt(0, 2 ** 31) : seed >>> 0;
}

export const ChatCompletionRequestDto = z
  .object({
    ...SHARED_FIELDS,
    messages: z.array(ChatMessageDto).min(1).max(1024).describe('Rendered with the checkpoint’s chat template'),
    stream: z.boolean().nullable().optional().describe('Server-Sent Events of `chat.completion.chunk`, ended by `data: [DONE]`').meta({ default: false }),
    max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional().describe('Default: what the context leaves after the prompt'),
    max_completion_tokens: z.number().int().min(1).max(1_000_000).nullable().optional().describe('Same as max_tokens (OpenAI’s newer name)'),
    n: z.number().int().min(1).max(8).nullable().optional().describe('Choices to sample').meta({ default: 1 }),
    logprobs: z.boolean().nullable().optional().describe('Per-token log-probs (under the model at temperature 1)').meta({ default: false }),
    top_logprobs: z
      .number()
      .int()
      .min(0)
      .max(20)
      .nullable()
      .optional()
      .describe('With `logprobs: true`: also the most likely tokens at each place of the answer (0 to 20), under the model at temperature 1'),
  })
  .strict()
  .meta({ id: 'ChatCompletionRequestDto' });

export type ChatCompletionRequest = z.output<typeof ChatCompletionRequestDto>;

export interface ParsedChat {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  generate: GenerateRequest;
}

/** Checks what one field alone cannot say and maps a request to what the model server takes. Errors name the field. */
export function chatParams(r: ChatCompletionRequest): ParsedChat {
  if (r.max_tokens != null && r.max_completion_tokens != null && r.max_tokens !== r.max_completion_tokens) {
    throw new AppError(ErrorCode.VALIDATION, 'max_tokens and max_completion_tokens disagree; give one', { field: 'max_completion_tokens' });
  }
  const maxTokens = r.max_completion_tokens ?? r.max_tokens ?? undefined;
  const messages = r.messages.map((m, i) => {
    const content = m.content === null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('');
    if (m.content === null && m.role !== 'assistant') {
      throw new AppError(ErrorCode.VALIDATION, `messages.${i}.content may be null only for an assistant message`, { field: `messages.${i}.content` });
    }
    // `developer` is OpenAI's newer name for the system role.
    return { role: m.role === 'developer' ? ('system' as const) : m.role, content };
  });
  const stop = stopList(r.stop);
  const stream = r.stream === true;
  if (r.top_logprobs != null && r.top_logprobs > 0 && r.logprobs !== true) {
    throw new AppError(ErrorCode.VALIDATION, 'top_logprobs needs logprobs: true', { field: 'top_logprobs' });
  }
  return {
    model: r.model,
    stream,
    includeUsage: stream && r.stream_options?.include_usage === true,
    generate: {
      messages,
      n: r.n ?? 1,
      temperature: r.temperature ?? 1,
      topP: r.top_p ?? 1,
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      stop,
      seed: samplerSeed(r.seed),
      logprobs: r.logprobs === true,
      topLogprobs: r.logprobs === true ? (r.top_logprobs ?? 0) : 0,
      stream,
    },
  };
}
