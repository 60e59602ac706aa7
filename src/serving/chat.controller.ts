import { Controller, HttpCode, Post, Res, UseFilters } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { ApiErrors } from '../core/api-errors.decorator';
import { ErrorBody } from '../core/app-error';
import { API_SCHEMAS } from '../core/openapi-schemas';
import { jsonResponse, ZodBody } from '../core/zod-api.decorators';
import { ChatCompletionRequestDto } from './chat-request';
import type { ChatCompletionRequest } from './chat-request';
import { ChatCompletionChunkDto, ChatCompletionDto } from './chat.dto';
import { ChatService } from './chat.service';
import { OpenAiErrorFilter } from './openai-error.filter';
import { sendOpenAiStream } from './openai-stream';

@ApiTags('serving')
@ApiBearerAuth()
@UseFilters(OpenAiErrorFilter)
@Controller('v1')
export class ChatController {
  constructor(
    private readonly chat: ChatService,
    private readonly config: AppConfig,
  ) {}

  @Post('chat/completions')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Chat with a job’s checkpoint or a cached Hugging Face model (OpenAI-compatible)',
    description:
      'OpenAI’s chat completions API over a checkpoint of one of your jobs (`job:<id>[/step-<n>]`) or a model folder you uploaded (`model:<id>`), so any OpenAI client can use a trained model, ' +
      'or over a Hugging Face model in the server’s Hub cache (`hf:Org/Name[@revision]`, one you may use; never downloaded by a request: ' +
      '404 `OT_ERR_MODEL_NOT_FOUND` says how to pull it) ' +
      '(base URL `<server>/v1`, the API key as the OpenAI key). With `stream: true` the answer is Server-Sent Events: ' +
      '`data: <chat.completion.chunk>` lines, then `data: [DONE]`. Errors carry both our body (`code`, `field`) and ' +
      'OpenAI’s `error: { message, type, code, param }`. The model runs in a separate process per checkpoint; the first ' +
      'request to a checkpoint waits for it to load. `OT_ERR_MODEL_UNAVAILABLE` (503): its process stopped; retry.',
  })
  @ApiResponse({
    status: 200,
    description: 'The completion, or (stream) an event stream of chunks',
    content: {
      'application/json': { schema: API_SCHEMAS.schema(ChatCompletionDto, 'output') as never },
      'text/event-stream': {
        // OpenAPI 3.0 has no schema for the events of a stream: each `data:` line's is named in an extension.
        schema: {
          type: 'string',
          description: 'data: lines, each a ChatCompletionChunkDto, then data: [DONE]',
          'x-data': API_SCHEMAS.schema(ChatCompletionChunkDto, 'output'),
        } as never,
      },
    },
  })
  @ApiErrors(400, 401, 404)
  @jsonResponse(422, ErrorBody, 'The checkpoint cannot be loaded (OT_ERR_MODEL_LOAD_FAILED)')
  @jsonResponse(503, ErrorBody, 'The model process stopped or timed out (OT_ERR_MODEL_UNAVAILABLE); retry')
  async completions(@CurrentUser() caller: Principal, @ZodBody(ChatCompletionRequestDto) body: ChatCompletionRequest, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.chat.prepare(caller, body);
    if (!prepared.chat.stream) {
      await reply.header('content-type', 'application/json; charset=utf-8').send(await this.chat.complete(prepared));
      return;
    }
    await this.chat.load(prepared);
    await sendOpenAiStream(reply, this.config.hostPaths, (emit) => this.chat.stream(prepared, emit));
  }
}
