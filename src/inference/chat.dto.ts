import { z } from 'zod';

/** The OpenAI-compatible answers of `POST /v1/chat/completions` and `GET /v1/models` (the request is `chat-request.ts`). */

const TokenLogprobDto = z
  .object({
    token: z.string(),
    logprob: z.number(),
    bytes: z.array(z.number().int()).describe('UTF-8 bytes of the token'),
    top_logprobs: z.array(z.never()).describe('Always empty (top_logprobs is not supported)'),
  })
  .meta({ id: 'TokenLogprobDto' });

const ChoiceLogprobsDto = z.object({ content: z.array(TokenLogprobDto) }).meta({ id: 'ChoiceLogprobsDto' });

const FinishReason = z.enum(['stop', 'length']);

const UsageDto = z
  .object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int().describe('Sampled tokens over all choices (stop tokens included)'),
    total_tokens: z.number().int(),
  })
  .meta({ id: 'UsageDto' });
export type UsageDto = z.output<typeof UsageDto>;

const ChatChoiceDto = z
  .object({
    index: z.number().int(),
    message: z.object({ role: z.literal('assistant'), content: z.string() }).meta({ id: 'AssistantMessageDto' }),
    logprobs: ChoiceLogprobsDto.nullable(),
    finish_reason: FinishReason.describe('stop: a stop token or stop string; length: max_tokens or the context reached'),
  })
  .meta({ id: 'ChatChoiceDto' });

/** OpenAI's `chat.completion`. */
export const ChatCompletionDto = z
  .object({
    id: z.string().meta({ example: 'chatcmpl-3f9a…' }),
    object: z.literal('chat.completion'),
    created: z.number().int().describe('Unix seconds'),
    model: z.string().describe('The model that answered: `<job id>/step-<n>`, or `hf:Org/Name@<commit>`'),
    choices: z.array(ChatChoiceDto),
    usage: UsageDto,
  })
  .meta({ id: 'ChatCompletionDto' });
export type ChatCompletionDto = z.output<typeof ChatCompletionDto>;

const ChunkChoiceDto = z
  .object({
    index: z.number().int(),
    delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }).meta({ id: 'ChunkDeltaDto' }),
    logprobs: ChoiceLogprobsDto.nullable().describe('A choice’s log-probs come whole with its last content chunk'),
    finish_reason: FinishReason.nullable(),
  })
  .meta({ id: 'ChunkChoiceDto' });

/** OpenAI's `chat.completion.chunk`: one `data:` line of a streamed answer. */
export const ChatCompletionChunkDto = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(ChunkChoiceDto),
    usage: UsageDto.nullable().optional().describe('With stream_options.include_usage: null on every chunk but the last'),
  })
  .meta({ id: 'ChatCompletionChunkDto' });
export type ChatCompletionChunkDto = z.output<typeof ChatCompletionChunkDto>;

const ModelBase = {
  object: z.literal('model'),
  created: z.number().int().describe('Unix seconds (the job’s creation; a Hub model’s download)'),
  owned_by: z.string().describe('You, for a checkpoint; the repo’s organisation for a Hub model'),
};

/** A checkpoint of one of the caller's jobs. */
const CheckpointModelDto = z
  .object({
    id: z.string().meta({ example: '4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00/step-20' }),
    ...ModelBase,
    job_id: z.uuid(),
    job_name: z.string().nullable(),
    step: z.number().int(),
  })
  .meta({ id: 'CheckpointModelDto' });

/** A model snapshot of the server's Hub cache. */
const HubModelDto = z
  .object({
    id: z.string().describe('`hf:<repo>@<commit>`').meta({ example: 'hf:Qwen/Qwen2.5-0.5B-Instruct@7ae557604adf67be50417f59c2c2f167def9a775' }),
    ...ModelBase,
    repo: z.string().meta({ example: 'Qwen/Qwen2.5-0.5B-Instruct' }),
    commit: z.string().describe('The commit sha of the snapshot'),
    revisions: z.array(z.string()).describe('Branches and tags of the cache at this commit: `hf:<repo>@<revision>` names it too (`hf:<repo>` when `main`)'),
  })
  .meta({ id: 'HubModelDto' });

const ModelDto = z.union([CheckpointModelDto, HubModelDto]).meta({ id: 'ModelDto' });
export type ModelDto = z.output<typeof ModelDto>;

export const ModelListDto = z.object({ object: z.literal('list'), data: z.array(ModelDto) }).meta({ id: 'ModelListDto' });
export type ModelListDto = z.output<typeof ModelListDto>;
