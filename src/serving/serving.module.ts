// src/serving owns the OpenAI-compatible server: chat, completions, /v1/models with uploads, the model pool and model servers.
import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CheckpointsModule } from '../checkpoints/checkpoints.module';
import { allowRawUpload } from '../core/raw-upload-parser';
import { DatasetsModule } from '../datasets/datasets.module';
import { HubAccessModule } from '../hub/hub-access.module';
import { JobsModule } from '../jobs-api/jobs.module';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { UserModelsDataModule } from '../models/user-models-data.module';
import { DevicePoolModule } from '../scheduler/device-pool.module';
import { TinkerModule } from '../tinker/tinker.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { CompletionsController } from './completions.controller';
import { CompletionsService } from './completions.service';
import { HubModelsService } from './hub-models.service';
import { ModelChecker } from './model-check';
import { ModelPoolService } from './model-pool.service';
import { MODEL_UPLOAD_TYPES } from './models.dto';
import { ModelsController } from './models.controller';
import { UserModelsService } from './user-models.service';

/**
 * The models users upload, and OpenAI-compatible chat and completions over them, checkpoints and the
 * cached Hub models. API role only.
 */
@Module({
  imports: [JobsModule, JobsDataModule, DatasetsModule, UserModelsDataModule, DevicePoolModule, HubAccessModule, CheckpointsModule, TinkerModule],
  controllers: [ChatController, CompletionsController, ModelsController],
  providers: [ChatService, CompletionsService, HubModelsService, ModelPoolService, UserModelsService, ModelChecker],
})
export class ServingModule implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    allowRawUpload(this.adapterHost.httpAdapter.getInstance<FastifyInstance>(), '/v1/models', MODEL_UPLOAD_TYPES);
  }
}
