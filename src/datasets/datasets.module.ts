// src/datasets owns dataset uploads, their row checks in a separate process, and the storage quota.
import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { DatasetReader } from './dataset-reader';
import { registerDatasetUploadParser } from './dataset-upload-parser';
import { StorageQuotaModule } from './storage-quota.module';
import { DatasetsController } from './datasets.controller';
import { DatasetsService } from './datasets.service';

/**
 * Dataset upload, check, listing and preview (API role). Exports {@link DatasetsService} for the
 * submit-time check that a job's `environment.dataset` is the caller's.
 */
@Module({
  imports: [JobsDataModule, StorageQuotaModule],
  controllers: [DatasetsController],
  providers: [DatasetsService, DatasetReader],
  exports: [DatasetsService, StorageQuotaModule],
})
export class DatasetsModule implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    registerDatasetUploadParser(this.adapterHost.httpAdapter.getInstance<FastifyInstance>());
  }
}
