// src/tinker owns the Tinker SDK's API (/api/v1): its sessions, training clients, samplers, futures and checkpoints, and their tables.
import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { PROTOBUF_CONTENT_TYPE } from '@opentinker/tinker-wire';
import type { FastifyInstance } from 'fastify';
import { allowRawUpload } from '../core/raw-upload-parser';
import { DatasetsModule } from '../datasets/datasets.module';
import { HubAccessModule } from '../hub/hub-access.module';
import { JobsModule } from '../jobs-api/jobs.module';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { UserModelsDataModule } from '../models/user-models-data.module';
import { SessionsModule } from '../sessions/sessions.module';
import { TinkerBaseModels } from './tinker-base-models';
import { TinkerCheckpoints } from './tinker-checkpoints.service';
import { TinkerFutures } from './tinker-futures.service';
import { TinkerRunners } from './tinker-runners.service';
import { TinkerSampling } from './tinker-sampling.service';
import { TinkerSessions } from './tinker-sessions.service';
import { TinkerTraining } from './tinker-training.service';
import { TinkerController } from './tinker.controller';
import { TinkerRepository } from './tinker.repository';

/**
 * The Tinker SDK's API (`/api/v1`, docs/tinker.md), API role only: sessions, training clients,
 * samplers, futures and checkpoints, each request recorded for the session's `tinker` job, whose runner
 * the worker's call relay (SessionRelayModule) feeds.
 */
@Module({
  imports: [JobsModule, JobsDataModule, SessionsModule, DatasetsModule, UserModelsDataModule, HubAccessModule],
  controllers: [TinkerController],
  providers: [TinkerRepository, TinkerBaseModels, TinkerRunners, TinkerSessions, TinkerCheckpoints, TinkerTraining, TinkerSampling, TinkerFutures],
  exports: [TinkerCheckpoints],
})
export class TinkerModule implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    allowRawUpload(this.adapterHost.httpAdapter.getInstance<FastifyInstance>(), '/api/v1/forward_backward', [PROTOBUF_CONTENT_TYPE]);
  }
}
