import { z } from 'zod';

/** The OpenAI-compatible answers of `POST /v1/chat/completions` and `/v1/models` (the request is `chat-request.ts`). */

const TopLogprobDto = z
  .object({
    token: z.string(),
    logprob: z.number(),
    bytes: z.array(z.number().int()).describe('UTF-8 bytes of the token'),
  })
  .meta({ id: 'TopLogprobDto' });

const TokenLogprobDto = z
  .object({
    token: z.string(),
    logprob: z.number(),
    bytes: z.array(z.number().int()).describe('UTF-8 bytes of the token'),
    top_logprobs: z.array(TopLogprobDto).describe('The `top_logprobs` most likely tokens at this place, most likely first (empty when not asked for)'),
  })
  .meta({ id: 'TokenLogprobDto' });

const ChoiceLogprobsDto = z.object({ content: z.array(TokenLogprobDto) }).meta({ id: 'ChoiceLogprobsDto' });

const FinishReason = z.enum(['stop', 'length']);

export const UsageDto = z
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
    model: z.string().describe('The model that answered: `job:<job id>/step-<n>`, `model:<id>`, or `hf:Org/Name@<commit>`'),
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
  created: z.number().int().describe('Unix seconds (the job’s creation; an upload; a Hub model’s download)'),
  owned_by: z.string().describe('You, for a checkpoint or an uploaded model; the repo’s organisation for a Hub model'),
};

/** A checkpoint of one of the caller's jobs. */
const CheckpointModelDto = z
  .object({
    id: z.string().describe('`job:<job id>/step-<n>`').meta({ example: 'job:4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00/step-20' }),
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

/** A model folder the caller uploaded (`POST /v1/models`). */
export const UserModelDto = z
  .object({
    id: z.string().describe('`model:<id>`').meta({ example: 'model:0b7e2c4a-5d1f-4e8a-9c3b-6f2d1a0e9b87' }),
    ...ModelBase,
    name: z.string(),
    model_type: z.string().describe('config.json’s model_type').meta({ example: 'qwen2' }),
    bytes: z.number().int(),
    content_sha256: z.string().describe('sha256 over the sorted lines `<path>\\0<size>\\0<sha256 of the file>\\n`: the same folder uploaded again has the same hash'),
    files: z.array(z.object({ path: z.string(), size: z.number().int() }).meta({ id: 'UserModelFileDto' })),
  })
  .meta({ id: 'UserModelDto' });
export type UserModelDto = z.output<typeof UserModelDto>;

export const ModelDto = z.union([CheckpointModelDto, UserModelDto, HubModelDto]).meta({ id: 'ModelDto' });
export type ModelDto = z.output<typeof ModelDto>;

export const ModelListDto = z.object({ object: z.literal('list'), data: z.array(ModelDto) }).meta({ id: 'ModelListDto' });
export type ModelListDto = z.output<typeof ModelListDto>;
