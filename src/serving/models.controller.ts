import { Controller, Delete, Get, Param, Post, Req, UseFilters } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { AppError, ErrorCode } from '../core/app-error';
import { drainRefused } from '../core/raw-upload-parser';
import { ZodQuery, ZodResponse } from '../core/zod-api.decorators';
import { isUserModelId, parseUserModelRef, userModelName } from '../models/user-model-files';
import { ModelDto, ModelListDto, UserModelDto } from './chat.dto';
import { ChatService, userModelDto } from './chat.service';
import { DeletedModelDto, MODEL_UPLOAD_TYPES, UploadModelQuery } from './models.dto';
import { OpenAiErrorFilter } from './openai-error.filter';
import { UserModelsService } from './user-models.service';

@ApiTags('serving')
@ApiBearerAuth()
@UseFilters(OpenAiErrorFilter)
@Controller('v1/models')
export class ModelsController {
  constructor(
    private readonly chat: ChatService,
    private readonly models: UserModelsService,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Checkpoints, uploaded models and Hub models you can use (OpenAI-compatible model list)',
    description:
      'One entry per checkpoint with a model folder, of your newest 200 jobs, newest step first (`job:<job id>/step-<n>`); then your uploaded ' +
      'models (`model:<id>`); then one per model snapshot in the server’s Hub cache that you may use (`hf:Org/Name@<commit>`, with `repo`, `commit` and the ' +
      '`revisions` that name it). `id` is what `model` (chat, completions) and a job’s `model.path` may name.',
  })
  @ZodResponse(200, ModelListDto)
  @ApiErrors(401)
  async list(@CurrentUser() caller: Principal): Promise<ModelListDto> {
    return this.chat.models(caller);
  }

  @Get(':id')
  @ApiOperation({
    summary: 'One model, by any name `model` takes (OpenAI-compatible)',
    description:
      'The entry `GET /v1/models` lists for it; `id` is its canonical name (`job:<id>` answers `job:<id>/step-<latest>`, a Hub branch its commit). ' +
      'A name with a `/` is sent percent-encoded (`job:4f0c…%2Fstep-20`, as OpenAI SDKs send it). Someone else’s is 404 `OT_ERR_MODEL_NOT_FOUND`.',
  })
  @ZodResponse(200, ModelDto)
  @ApiErrors(400, 401, 404)
  async get(@CurrentUser() caller: Principal, @Param('id') id: string): Promise<ModelDto> {
    return this.chat.model(caller, id);
  }

  /** The same with the name's `/` not encoded (`GET /v1/models/job:<id>/step-3`, as curl users write it). */
  @Get('*')
  @ApiExcludeEndpoint()
  async getWithSlash(@CurrentUser() caller: Principal, @Req() req: FastifyRequest): Promise<ModelDto> {
    return this.chat.model(caller, (req.params as Record<string, string>)['*']);
  }

  @Post()
  @ApiOperation({
    summary: 'Upload a Hugging Face model folder (a tar stream as the raw body); it becomes model:<id>, yours only',
    description:
      'The body is a tar of the folder (its files at the top, or under one folder), streamed to disk (limit: setting model_upload_max_bytes and ' +
      'your storage quota; over them 413 OT_ERR_MODEL_TOO_LARGE or OT_ERR_QUOTA_EXCEEDED). Only regular files named as a model folder’s are taken: ' +
      '*.safetensors (and the index), config.json, generation_config.json, tokenizer files, chat template files; a link, a device, an absolute ' +
      'or `..` path, a subfolder or any other file refuses the whole upload (400 OT_ERR_MODEL_INVALID), as does a folder the engine cannot load ' +
      '(checked in a separate process: config, tokenizer, safetensors headers). The answer’s `id` (`model:<id>`) names it in chat, completions ' +
      'and any job’s model.path; `content_sha256` lets a client find an upload of the same folder.',
  })
  @ApiConsumes(...MODEL_UPLOAD_TYPES)
  @ApiBody({ description: 'The tar stream', schema: { type: 'string', format: 'binary' } })
  @ZodResponse(201, UserModelDto)
  @ApiErrors(400, 401, 413, 415)
  async upload(@CurrentUser() caller: Principal, @ZodQuery(UploadModelQuery) q: UploadModelQuery, @Req() req: FastifyRequest): Promise<UserModelDto> {
    const body = req.body;
    if (!(body instanceof Readable)) throw new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Send the tar stream as the body with content type ${MODEL_UPLOAD_TYPES.join(' or ')}`);
    const length = Number(req.headers['content-length']);
    try {
      return userModelDto(await this.models.upload(caller, { name: q.name, contentLength: Number.isFinite(length) ? length : undefined }, body), caller);
    } catch (error) {
      if (!body.readableEnded) drainRefused(body);
      throw error;
    }
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Delete a model you uploaded, and its files (OpenAI-compatible answer)',
    description:
      '`model:<id>` (or the bare id). Refused with 409 OT_ERR_MODEL_IN_USE while a queued or running job names it. Checkpoints and Hub models are not deleted here (400).',
  })
  @ZodResponse(200, DeletedModelDto)
  @ApiErrors(400, 401, 404, 409)
  async delete(@CurrentUser() caller: Principal, @Param('id') id: string): Promise<DeletedModelDto> {
    const modelId = isUserModelId(id) ? id : parseUserModelRef(id);
    if (modelId === null) {
      if (id.startsWith('model:')) throw new AppError(ErrorCode.MODEL_NOT_FOUND, `Model ${JSON.stringify(id)} not found`, { field: 'id' });
      throw new AppError(ErrorCode.VALIDATION, `Only models you uploaded (model:<id>) are deleted here; a checkpoint goes with its job, a Hub model with opentinker models rm`, {
        field: 'id',
      });
    }
    await this.models.delete(caller, modelId);
    return { id: userModelName(modelId), object: 'model', deleted: true };
  }
}
