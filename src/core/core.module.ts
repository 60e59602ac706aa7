// src/core owns what every module uses: typed errors and their HTTP mapping, the body parser, columns, the event bus, SSE, child processes, the zod edge.
import { Global, Module } from '@nestjs/common';
import { LocalBus } from './local-bus';

/** The in-process event bus, shared by every module. */
@Global()
@Module({ providers: [LocalBus], exports: [LocalBus] })
export class CoreModule {}
