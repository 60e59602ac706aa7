// src/sessions owns session calls: their routes and table, and the worker's relay to the runner.
import { Module } from '@nestjs/common';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { JobsModule } from '../jobs-api/jobs.module';
import { CallWaiter } from './call-waiter.service';
import { SessionCallsRepository } from './session-calls.repository';
import { SessionsController } from './sessions.controller';
import { SessionsService } from './sessions.service';

/** The API side of client-driven training sessions (the worker side is SessionRelayModule). */
@Module({
  imports: [JobsModule, JobsDataModule],
  controllers: [SessionsController],
  providers: [SessionsService, SessionCallsRepository, CallWaiter],
  exports: [SessionCallsRepository, CallWaiter],
})
export class SessionsModule {}
