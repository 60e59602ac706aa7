import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import {
  ClientConfigRequest,
  ClientSessionFinishRequest,
  CreateSessionRequest,
  ListQuery,
  PROTOBUF_CONTENT_TYPE,
  RECOMMENDED_CLIENT_CONFIG,
  SessionHeartbeatRequest,
  TelemetrySendRequest,
  WeightsInfoRequest,
  type CheckpointsListResponse,
  type ClientConfigResponse,
  type ClientDynamicConfigResponse,
  type CreateSamplingSessionResponse,
  type CreateSessionResponse,
  type GetInfoResponse,
  type GetSamplerResponse,
  type GetServerCapabilitiesResponse,
  type HealthResponse,
  type SessionHeartbeatResponse,
  type TelemetryResponse,
  type TrainingRun,
  type TrainingRunsResponse,
  type UntypedAPIFuture,
  type WeightsInfoResponse,
} from '@opentinker/tinker-wire';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { CurrentUser, Public } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { drainRefused } from '../core/raw-upload-parser';
import { parseOrThrow } from '../core/zod-error';
import { ArchiveQuery, type CheckpointArchiveUrlResponse } from './tinker-archive-urls';
import { readBody } from './tinker-body';
import { TinkerBaseModels } from './tinker-base-models';
import { TinkerCheckpoints } from './tinker-checkpoints.service';
import { TinkerFutures } from './tinker-futures.service';
import { TinkerSampling } from './tinker-sampling.service';
import { TinkerSessions } from './tinker-sessions.service';
import { TinkerTraining } from './tinker-training.service';
import { TinkerRepository } from './tinker.repository';

type IdempotencyHeader = string | undefined;

/** The SDK's retry key (`X-Idempotency-Key`), the same across the HTTP layer's retries of one submission. */
function idempotencyKey(header: IdempotencyHeader): string | null {
  return typeof header === 'string' && header.length > 0 && header.length <= 200 ? header : null;
}

/**
 * The routes the official Tinker Python SDK (`pip install tinker`) and its `RestClient` call, under
 * `/api/v1` (docs/tinker.md). JSON bodies are read with the SDK's own schemas (`@opentinker/tinker-wire`),
 * `forward_backward` as protobuf; every route needs a key (`X-API-Key: tml-…`). Not in the OpenAPI
 * document: the SDK's wire is its own, described in docs/tinker.md.
 */
@ApiExcludeController()
@Controller('api/v1')
export class TinkerController {
  constructor(
    private readonly config: AppConfig,
    private readonly bases: TinkerBaseModels,
    private readonly sessions: TinkerSessions,
    private readonly training: TinkerTraining,
    private readonly sampling: TinkerSampling,
    private readonly futures: TinkerFutures,
    private readonly checkpoints: TinkerCheckpoints,
    private readonly repo: TinkerRepository,
  ) {}

  @Post('client/config')
  @HttpCode(200)
  clientConfig(@Body() body: unknown): ClientConfigResponse {
    parseOrThrow(ClientConfigRequest, body);
    return { ...RECOMMENDED_CLIENT_CONFIG };
  }

  @Post('client/dynamic_config')
  @HttpCode(200)
  dynamicConfig(@Body() body: unknown): ClientDynamicConfigResponse {
    parseOrThrow(ClientConfigRequest, body);
    return { refresh_interval_sec: 300, sample_cancel_enabled: false };
  }

  @Get('healthz')
  @Public()
  healthz(): HealthResponse {
    return { status: 'ok' };
  }

  @Get('get_server_capabilities')
  async capabilities(@CurrentUser() caller: Principal): Promise<GetServerCapabilitiesResponse> {
    return { supported_models: await this.bases.supported(caller) };
  }

  @Post('create_session')
  @HttpCode(200)
  createSession(@CurrentUser() caller: Principal, @Body() body: unknown, @Headers('x-idempotency-key') key: IdempotencyHeader): Promise<CreateSessionResponse> {
    return this.sessions.create(caller, parseOrThrow(CreateSessionRequest, body), idempotencyKey(key));
  }

  @Post('session_heartbeat')
  @HttpCode(200)
  async heartbeat(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<SessionHeartbeatResponse> {
    await this.sessions.heartbeat(caller, parseOrThrow(SessionHeartbeatRequest, body).session_id);
    return { type: 'session_heartbeat' };
  }

  @Post('sessions/:session_id/finish')
  @HttpCode(200)
  async finish(@CurrentUser() caller: Principal, @Param('session_id') id: string, @Body() body: unknown): Promise<Record<string, never>> {
    await this.sessions.finish(caller, id, parseOrThrow(ClientSessionFinishRequest, body));
    return {};
  }

  /** Accepted and dropped: nothing is sent anywhere. */
  @Post('telemetry')
  @HttpCode(200)
  telemetry(@Body() body: unknown): TelemetryResponse {
    parseOrThrow(TelemetrySendRequest, body);
    return { status: 'accepted' };
  }

  @Post('create_model')
  @HttpCode(200)
  createModel(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<UntypedAPIFuture> {
    return this.training.createModel(caller, body);
  }

  @Post('get_info')
  @HttpCode(200)
  getInfo(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<GetInfoResponse> {
    return this.training.getInfo(caller, body);
  }

  @Post('forward_backward')
  @HttpCode(200)
  async forwardBackward(@CurrentUser() caller: Principal, @Req() req: FastifyRequest): Promise<UntypedAPIFuture> {
    const body = req.body;
    if (!(body instanceof Readable)) {
      throw new AppError(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        `forward_backward takes a protobuf body (${PROTOBUF_CONTENT_TYPE}); SDKs before 0.25 send one when the client config says proto_write_fwdbwd, which this server's does`,
      );
    }
    let bytes: Buffer;
    try {
      bytes = await readBody(body, this.config.values.tinker_request_max_bytes);
    } catch (error) {
      if (!body.readableEnded) drainRefused(body);
      throw error;
    }
    const encoding = req.headers['content-encoding'];
    return this.training.forwardBackward(caller, bytes, Array.isArray(encoding) ? encoding[0] : encoding);
  }

  @Post('optim_step')
  @HttpCode(200)
  optimStep(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<UntypedAPIFuture> {
    return this.training.optimStep(caller, body);
  }

  @Post('save_weights')
  @HttpCode(200)
  saveWeights(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<UntypedAPIFuture> {
    return this.training.saveWeights(caller, body);
  }

  @Post('save_weights_for_sampler')
  @HttpCode(200)
  saveWeightsForSampler(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<UntypedAPIFuture> {
    return this.training.saveWeightsForSampler(caller, body);
  }

  @Post('load_weights')
  @HttpCode(200)
  loadWeights(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<UntypedAPIFuture> {
    return this.training.loadWeights(caller, body);
  }

  @Post('create_sampling_session')
  @HttpCode(200)
  createSamplingSession(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<CreateSamplingSessionResponse> {
    return this.sampling.createSamplingSession(caller, body);
  }

  @Get('samplers/:sampler_id')
  getSampler(@CurrentUser() caller: Principal, @Param('sampler_id') id: string): Promise<GetSamplerResponse> {
    return this.sampling.getSampler(caller, id);
  }

  @Post('asample')
  @HttpCode(200)
  sample(@CurrentUser() caller: Principal, @Body() body: unknown, @Headers('x-idempotency-key') key: IdempotencyHeader): Promise<UntypedAPIFuture> {
    return this.sampling.sample(caller, body, idempotencyKey(key));
  }

  @Post('retrieve_future')
  @HttpCode(200)
  async retrieveFuture(@CurrentUser() caller: Principal, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply): Promise<unknown> {
    const answer = await this.futures.retrieve(caller, body);
    if ('json' in answer) return answer.json;
    reply.header('content-type', PROTOBUF_CONTENT_TYPE);
    return Buffer.from(answer.protobuf.buffer, answer.protobuf.byteOffset, answer.protobuf.byteLength);
  }

  @Post('cancel_future')
  @HttpCode(200)
  async cancelFuture(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<Record<string, never>> {
    await this.futures.cancel(caller, body);
    return {};
  }

  @Post('weights_info')
  @HttpCode(200)
  weightsInfo(@CurrentUser() caller: Principal, @Body() body: unknown): Promise<WeightsInfoResponse> {
    return this.checkpoints.weightsInfo(caller, parseOrThrow(WeightsInfoRequest, body).tinker_path);
  }

  @Get('training_runs')
  async trainingRuns(@CurrentUser() caller: Principal, @Query() query: unknown): Promise<TrainingRunsResponse> {
    const q = parseOrThrow(ListQuery, query ?? {});
    const offset = q.offset ?? 0;
    const limit = Math.min(q.limit ?? 20, 1000);
    const { rows, total } = await this.repo.modelsOf(caller.userId, offset, limit);
    const runs: TrainingRun[] = [];
    for (const model of rows) runs.push(await this.checkpoints.trainingRun(caller, model));
    return { training_runs: runs, cursor: { offset, limit, total_count: total } };
  }

  @Get('training_runs/:id')
  async trainingRun(@CurrentUser() caller: Principal, @Param('id') id: string): Promise<TrainingRun> {
    return this.checkpoints.trainingRun(caller, await this.checkpoints.ownedModel(caller, id, 'training_run_id'));
  }

  @Get('training_runs/:id/checkpoints')
  async checkpointsOf(@CurrentUser() caller: Principal, @Param('id') id: string): Promise<CheckpointsListResponse> {
    return { checkpoints: await this.checkpoints.listOf(caller, id) };
  }

  @Delete('training_runs/:id/checkpoints/*')
  async deleteCheckpoint(@CurrentUser() caller: Principal, @Param('id') id: string, @Req() req: FastifyRequest): Promise<Record<string, never>> {
    await this.checkpoints.delete(caller, id, (req.params as Record<string, string>)['*']);
    return {};
  }

  /** `RestClient.get_checkpoint_archive_url*` (in 0.22.3 and 0.25.0, gone by 0.38.0): a signed URL that downloads the checkpoint without a key. */
  @Get('training_runs/:id/checkpoints/:kind/:name/archive')
  archiveUrl(
    @CurrentUser() caller: Principal,
    @Param('id') id: string,
    @Param('kind') kind: string,
    @Param('name') name: string,
    @Req() req: FastifyRequest,
  ): Promise<CheckpointArchiveUrlResponse> {
    return this.checkpoints.archiveUrl(caller, { modelId: id, kind, name }, `${req.protocol}://${req.host}`);
  }

  /** What a signed archive URL fetches: no key, the signature is the proof (tinker-archive-urls.ts). */
  @Get('training_runs/:id/checkpoints/:kind/:name/archive.tar')
  @Public()
  async archive(@Param('id') id: string, @Param('kind') kind: string, @Param('name') name: string, @Query() query: unknown, @Res() reply: FastifyReply): Promise<void> {
    const q = parseOrThrow(ArchiveQuery, query ?? {});
    const { stream } = await this.checkpoints.openArchive({ modelId: id, kind, name }, q.expires, q.signature);
    await reply.header('content-type', 'application/x-tar').header('content-disposition', `attachment; filename="${name}.tar"`).header('cache-control', 'no-store').send(stream);
  }

  @Get('checkpoints')
  async userCheckpoints(@CurrentUser() caller: Principal, @Query() query: unknown): Promise<CheckpointsListResponse> {
    const q = parseOrThrow(ListQuery, query ?? {});
    const offset = q.offset ?? 0;
    const limit = Math.min(q.limit ?? 100, 1000);
    const { checkpoints, total } = await this.checkpoints.listAll(caller, offset, limit);
    return { checkpoints, cursor: { offset, limit, total_count: total } };
  }
}
