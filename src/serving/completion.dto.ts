import { z } from 'zod';
import { UsageDto } from './chat.dto';

/** The OpenAI-compatible answers of `POST /v1/completions` (the request is `completion-request.ts`). */

/** OpenAI's legacy log-probs: parallel lists over a choice's tokens (the echoed prompt's first, with `echo`). */
const CompletionLogprobsDto = z
  .object({
    tokens: z.array(z.string()),
    token_logprobs: z.array(z.number().nullable()).describe('null for the first token of an echoed prompt (nothing comes before it)'),
    top_logprobs: z
      .array(z.record(z.string(), z.number()).nullable())
      .describe('The `logprobs` most likely tokens at each place, and the sampled one, token → log-prob; null where token_logprobs is'),
    text_offset: z.array(z.number().int()).describe('Where each token starts in the choice’s text (characters)'),
  })
  .meta({ id: 'CompletionLogprobsDto' });
export type CompletionLogprobsDto = z.output<typeof CompletionLogprobsDto>;

const CompletionChoiceDto = z
  .object({
    index: z.number().int().describe('prompt index · n + j'),
    text: z.string(),
    logprobs: CompletionLogprobsDto.nullable(),
    finish_reason: z.enum(['stop', 'length']).describe('stop: a stop token or stop string; length: max_tokens or the context reached'),
  })
  .meta({ id: 'CompletionChoiceDto' });

/** OpenAI's `text_completion`. */
export const CompletionDto = z
  .object({
    id: z.string().meta({ example: 'cmpl-3f9a…' }),
    object: z.literal('text_completion'),
    created: z.number().int().describe('Unix seconds'),
    model: z.string().describe('The model that answered: `job:<job id>/step-<n>`, `model:<id>`, or `hf:Org/Name@<commit>`'),
    choices: z.array(CompletionChoiceDto),
    usage: UsageDto,
  })
  .meta({ id: 'CompletionDto' });
export type CompletionDto = z.output<typeof CompletionDto>;

const CompletionChunkChoiceDto = z
  .object({
    index: z.number().int(),
    text: z.string(),
    logprobs: CompletionLogprobsDto.nullable().describe('A choice’s log-probs come whole with its finishing chunk'),
    finish_reason: z.enum(['stop', 'length']).nullable(),
  })
  .meta({ id: 'CompletionChunkChoiceDto' });

/** One `data:` line of a streamed completion (OpenAI names it `text_completion` too). */
export const CompletionChunkDto = z
  .object({
    id: z.string(),
    object: z.literal('text_completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(CompletionChunkChoiceDto),
    usage: UsageDto.nullable().optional().describe('With stream_options.include_usage: null on every chunk but the last'),
  })
  .meta({ id: 'CompletionChunkDto' });
export type CompletionChunkDto = z.output<typeof CompletionChunkDto>;
