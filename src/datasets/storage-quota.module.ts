// src/datasets owns dataset uploads, their row checks in a separate process, and the storage quota.
import { Module } from '@nestjs/common';
import { HubAccessModule } from '../hub/hub-access.module';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { UserModelsDataModule } from '../models/user-models-data.module';
import { DatasetsRepository } from './datasets.repository';
import { StorageQuota } from './storage-quota.service';

/** Each user's storage quota (datasets, checkpoints, uploaded models, Hub downloads): for uploads, submissions and the worker's Hub downloads. */
@Module({
  imports: [JobsDataModule, HubAccessModule, UserModelsDataModule],
  providers: [DatasetsRepository, StorageQuota],
  exports: [DatasetsRepository, StorageQuota],
})
export class StorageQuotaModule {}
