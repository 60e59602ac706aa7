// src/datasets owns dataset uploads, their row checks in a separate process, and the storage quota.
import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { UserModelsDataModule } from '../models/user-models-data.module';
import { DatasetReader } from './dataset-reader';
import { registerDatasetUploadParser } from './dataset-upload-parser';
import { StorageQuota } from './storage-quota.service';
import { DatasetsController } from './datasets.controller';
import { DatasetsRepository } from './datasets.repository';
import { DatasetsService } from './datasets.service';

/**
 * Dataset upload, check, listing and preview (API role). Exports {@link DatasetsService} for the
 * submit-time check that a job's `environment.dataset` is the caller's.
 */
@Module({
  imports: [JobsDataModule, UserModelsDataModule],
  controllers: [DatasetsController],
  providers: [DatasetsRepository, DatasetsService, DatasetReader, StorageQuota],
  exports: [DatasetsService, StorageQuota],
})
export class DatasetsModule implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    registerDatasetUploadParser(this.adapterHost.httpAdapter.getInstance<FastifyInstance>());
  }
}
