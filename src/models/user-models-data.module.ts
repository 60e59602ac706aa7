// src/models owns the uploaded models' table and where their folders live.
import { Module } from '@nestjs/common';
import { UserModelsRepository } from './user-models.repository';

/** The uploaded models' table, for the routes that manage them, the storage quota and the job spec checks. */
@Module({
  providers: [UserModelsRepository],
  exports: [UserModelsRepository],
})
export class UserModelsDataModule {}
