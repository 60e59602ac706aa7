import { Module } from '@nestjs/common';
import { HubAccessModule } from '../hub/hub-access.module';
import { JobsModule } from '../jobs/api/jobs.module';
import { DevicePoolModule } from '../scheduler/device-pool.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';
import { HubModelsService } from './hub-models.service';
import { ModelPoolService } from './model-pool.service';

/** Checkpoints (list, download) and chat completions over them and the cached Hub models. API role only. */
@Module({
  imports: [JobsModule, DevicePoolModule, HubAccessModule],
  controllers: [CheckpointsController, ChatController],
  providers: [CheckpointsService, ChatService, HubModelsService, ModelPoolService],
})
export class ServingModule {}
