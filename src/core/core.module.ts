import { Global, Module } from '@nestjs/common';
import { LocalBus } from './local-bus';

/** The in-process event bus, shared by every module. */
@Global()
@Module({ providers: [LocalBus], exports: [LocalBus] })
export class CoreModule {}
