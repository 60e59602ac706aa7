import { DynamicModule, Module } from '@nestjs/common';
import { join } from 'node:path';
import { JobsModule } from '../jobs/jobs.module';
import { DevicePoolModule } from '../scheduler/device-pool.module';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';
import { MODEL_SERVER_ENTRY, ModelPoolService } from './model-pool.service';

/** Checkpoints (list, download) and chat completions over them. API role only. */
@Module({})
export class ServingModule {
  static forRoot(options: { hostRoot: string }): DynamicModule {
    return {
      module: ServingModule,
      imports: [JobsModule, DevicePoolModule],
      controllers: [CheckpointsController, ChatController],
      providers: [
        CheckpointsService,
        ChatService,
        ModelPoolService,
        { provide: MODEL_SERVER_ENTRY, useValue: join(options.hostRoot, 'dist', 'inference', 'model-server.main.js') },
      ],
    };
  }
}
