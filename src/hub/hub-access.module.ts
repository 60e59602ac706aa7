import { Module } from '@nestjs/common';
import { HubAccessService } from './hub-access.service';

/** Who may use which Hub snapshot, and the Hub bytes of each user: for chat, the worker and the storage quota. */
@Module({
  providers: [HubAccessService],
  exports: [HubAccessService],
})
export class HubAccessModule {}
