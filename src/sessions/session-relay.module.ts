// src/sessions owns session calls: their routes and table, and the worker's relay to the runner.
import { Module } from '@nestjs/common';
import { SessionCallsRepository } from './session-calls.repository';
import { SessionRelayService } from './session-relay.service';

/**
 * The worker side of client-driven sessions: relays calls to the job runners of kinds with the `calls`
 * capability. Imported beside the worker role (it hooks into that role's JobSupervisor).
 */
@Module({
  providers: [SessionRelayService, SessionCallsRepository],
})
export class SessionRelayModule {}
