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
import { CompletionRequestDto, type CompletionRequestBody } from './completion-request';
import { CompletionChunkDto, CompletionDto } from './completion.dto';
import { CompletionsService } from './completions.service';
import { OpenAiErrorFilter } from './openai-error.filter';
import { sendOpenAiStream } from './openai-stream';

@ApiTags('serving')
@ApiBearerAuth()
@UseFilters(OpenAiErrorFilter)
@Controller('v1')
export class CompletionsController {
  constructor(
    private readonly completions: CompletionsService,
    private readonly config: AppConfig,
  ) {}

  @Post('completions')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Complete a prompt with a checkpoint, an uploaded model or a cached Hugging Face model (OpenAI’s legacy completions)',
    description:
      'OpenAI’s legacy completions API (what vLLM-style clients call), over the models `POST /v1/chat/completions` serves: the prompt as text or ' +
      'token ids, one or several, used as it is (no chat template). `max_tokens` defaults to 16, as OpenAI’s; `logprobs` (0 to 5) gives each ' +
      'token’s log-prob and the most likely tokens at its place; `echo` puts the prompt (and its tokens’ log-probs) before the answer. With ' +
      '`stream: true`: `data: <text_completion>` events, a finishing event per choice with its log-probs, then `data: [DONE]`. Errors carry both ' +
      'our body (`code`, `field`) and OpenAI’s `error: { message, type, code, param }`.',
  })
  @ApiResponse({
    status: 200,
    description: 'The completion, or (stream) an event stream of chunks',
    content: {
      'application/json': { schema: API_SCHEMAS.schema(CompletionDto, 'output') as never },
      'text/event-stream': {
        schema: {
          type: 'string',
          description: 'data: lines, each a CompletionChunkDto, then data: [DONE]',
          'x-data': API_SCHEMAS.schema(CompletionChunkDto, 'output'),
        } as never,
      },
    },
  })
  @ApiErrors(400, 401, 404)
  @jsonResponse(422, ErrorBody, 'The model cannot be loaded (OT_ERR_MODEL_LOAD_FAILED)')
  @jsonResponse(503, ErrorBody, 'The model process stopped or timed out (OT_ERR_MODEL_UNAVAILABLE); retry')
  async complete(@CurrentUser() caller: Principal, @ZodBody(CompletionRequestDto) body: CompletionRequestBody, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.completions.prepare(caller, body);
    if (!prepared.parsed.stream) {
      await reply.header('content-type', 'application/json; charset=utf-8').send(await this.completions.complete(prepared));
      return;
    }
    await this.completions.load(prepared);
    await sendOpenAiStream(reply, this.config.hostPaths, (emit) => this.completions.stream(prepared, emit));
  }
}
