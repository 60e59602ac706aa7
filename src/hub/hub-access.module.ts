// src/hub owns models and datasets by Hugging Face name: the Hub cache, its downloads, who may use which snapshot, a job's Hub access.
import { Module } from '@nestjs/common';
import { HubAccessService } from './hub-access.service';

/** Who may use which Hub snapshot, and the Hub bytes of each user: for chat, the worker and the storage quota. */
@Module({
  providers: [HubAccessService],
  exports: [HubAccessService],
})
export class HubAccessModule {}
