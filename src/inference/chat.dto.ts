import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** OpenAPI descriptions of the OpenAI-compatible bodies; the request is validated by `chat-request.ts`. */

export class ChatMessageDto {
  @ApiProperty({ enum: ['system', 'developer', 'user', 'assistant', 'tool'] }) role!: string;
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', properties: { type: { type: 'string', enum: ['text'] }, text: { type: 'string' } } } }],
    nullable: true,
    description: 'Text, or text parts (joined)',
  })
  content!: string | { type: 'text'; text: string }[] | null;
  @ApiPropertyOptional() name?: string;
}

export class StreamOptionsDto {
  @ApiPropertyOptional({ description: 'Send a last chunk with `usage` (and `usage: null` on the others)' }) include_usage?: boolean;
}

export class ChatCompletionRequestDto {
  @ApiProperty({
    example: '4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00/step-20',
    description:
      'A checkpoint: `<job id>` (its latest), `<job id>/step-<n>`, or a job name unique among your jobs (optionally `/step-<n>`); ' +
      "or a Hugging Face model in the server's Hub cache: `hf:Org/Name` (its main branch) or `hf:Org/Name@<revision>` (branch, tag or commit)",
  })
  model!: string;
  @ApiProperty({ type: [ChatMessageDto], description: 'Rendered with the checkpoint’s chat template' }) messages!: ChatMessageDto[];
  @ApiPropertyOptional({ default: false, description: 'Server-Sent Events of `chat.completion.chunk`, ended by `data: [DONE]`' }) stream?: boolean;
  @ApiPropertyOptional({ type: StreamOptionsDto }) stream_options?: StreamOptionsDto;
  @ApiPropertyOptional({ minimum: 0, maximum: 2, default: 1, description: '0 = greedy' }) temperature?: number;
  @ApiPropertyOptional({ exclusiveMinimum: true, minimum: 0, maximum: 1, default: 1 }) top_p?: number;
  @ApiPropertyOptional({ minimum: 1, description: 'Default: what the context leaves after the prompt' }) max_tokens?: number;
  @ApiPropertyOptional({ minimum: 1, description: 'Same as max_tokens (OpenAI’s newer name)' }) max_completion_tokens?: number;
  @ApiPropertyOptional({ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 16 }], description: 'Stop strings (not included in the answer)' })
  stop?: string | string[];
  @ApiPropertyOptional({ description: 'Same seed, same request, same checkpoint: same answer' }) seed?: number;
  @ApiPropertyOptional({ minimum: 1, maximum: 8, default: 1, description: 'Choices to sample' }) n?: number;
  @ApiPropertyOptional({ default: false, description: 'Per-token log-probs (under the model at temperature 1)' }) logprobs?: boolean;
  @ApiPropertyOptional({ description: 'Not supported: only 0 or absent' }) top_logprobs?: number;
  @ApiPropertyOptional({ description: 'Only 0' }) presence_penalty?: number;
  @ApiPropertyOptional({ description: 'Only 0' }) frequency_penalty?: number;
  @ApiPropertyOptional({ description: 'Accepted and ignored' }) user?: string;
}

export class TokenLogprobDto {
  @ApiProperty() token!: string;
  @ApiProperty() logprob!: number;
  @ApiProperty({ type: [Number], description: 'UTF-8 bytes of the token' }) bytes!: number[];
  @ApiProperty({ type: [Object], description: 'Always empty (top_logprobs is not supported)' }) top_logprobs!: unknown[];
}

export class ChoiceLogprobsDto {
  @ApiProperty({ type: [TokenLogprobDto] }) content!: TokenLogprobDto[];
}

export class AssistantMessageDto {
  @ApiProperty({ enum: ['assistant'] }) role!: 'assistant';
  @ApiProperty() content!: string;
}

export class ChatChoiceDto {
  @ApiProperty() index!: number;
  @ApiProperty({ type: AssistantMessageDto }) message!: AssistantMessageDto;
  @ApiProperty({ type: ChoiceLogprobsDto, nullable: true }) logprobs!: ChoiceLogprobsDto | null;
  @ApiProperty({ enum: ['stop', 'length'], description: 'stop: a stop token or stop string; length: max_tokens or the context reached' }) finish_reason!: 'stop' | 'length';
}

export class UsageDto {
  @ApiProperty() prompt_tokens!: number;
  @ApiProperty({ description: 'Sampled tokens over all choices (stop tokens included)' }) completion_tokens!: number;
  @ApiProperty() total_tokens!: number;
}

export class ChatCompletionDto {
  @ApiProperty({ example: 'chatcmpl-3f9a…' }) id!: string;
  @ApiProperty({ enum: ['chat.completion'] }) object!: 'chat.completion';
  @ApiProperty({ description: 'Unix seconds' }) created!: number;
  @ApiProperty({ description: 'The model that answered: `<job id>/step-<n>`, or `hf:Org/Name@<commit>`' }) model!: string;
  @ApiProperty({ type: [ChatChoiceDto] }) choices!: ChatChoiceDto[];
  @ApiProperty({ type: UsageDto }) usage!: UsageDto;
}

export class ChunkDeltaDto {
  @ApiPropertyOptional({ enum: ['assistant'] }) role?: 'assistant';
  @ApiPropertyOptional() content?: string;
}

export class ChunkChoiceDto {
  @ApiProperty() index!: number;
  @ApiProperty({ type: ChunkDeltaDto }) delta!: ChunkDeltaDto;
  @ApiProperty({ type: ChoiceLogprobsDto, nullable: true, description: 'A choice’s log-probs come whole with its last content chunk' }) logprobs!: ChoiceLogprobsDto | null;
  @ApiProperty({ enum: ['stop', 'length'], nullable: true }) finish_reason!: 'stop' | 'length' | null;
}

/** One `data:` line of a streamed answer. */
export class ChatCompletionChunkDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['chat.completion.chunk'] }) object!: 'chat.completion.chunk';
  @ApiProperty() created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: [ChunkChoiceDto] }) choices!: ChunkChoiceDto[];
  @ApiPropertyOptional({ type: UsageDto, nullable: true }) usage?: UsageDto | null;
}

export class ModelDto {
  @ApiProperty({ example: '4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00/step-20' }) id!: string;
  @ApiProperty({ enum: ['model'] }) object!: 'model';
  @ApiProperty({ description: 'Unix seconds (the job’s creation; a Hub model’s download)' }) created!: number;
  @ApiProperty({ description: 'You, for a checkpoint; the repo’s organisation for a Hub model' }) owned_by!: string;
  @ApiPropertyOptional({ description: 'A checkpoint’s job' }) job_id?: string;
  @ApiPropertyOptional({ nullable: true, type: String }) job_name?: string | null;
  @ApiPropertyOptional() step?: number;
  @ApiPropertyOptional({ example: 'Qwen/Qwen2.5-0.5B-Instruct', description: 'A Hub model’s repo (`id` is `hf:<repo>@<commit>`)' }) repo?: string;
  @ApiPropertyOptional({ description: 'A Hub model’s commit sha' }) commit?: string;
  @ApiPropertyOptional({ type: [String], description: 'Branches and tags of the cache at this commit: `hf:<repo>@<revision>` names it too (`hf:<repo>` when `main`)' })
  revisions?: string[];
}

export class ModelListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ModelDto] }) data!: ModelDto[];
}
