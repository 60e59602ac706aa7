import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ClientSessionFinishRequest, CreateSessionRequest, CreateSessionResponse } from '@opentinker/tinker-wire';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { JobsRepository } from '../jobs/jobs.repository';
import { SessionCallsRepository } from '../sessions/session-calls.repository';
import { TinkerRunners } from './tinker-runners.service';
import type { TinkerSessionEntity } from './tinker-session.entity';
import { TinkerRepository } from './tinker.repository';

/** Sessions ended per look of the expiry sweep. */
const SWEEP_BATCH = 100;

/**
 * Tinker sessions: created by the SDK's first training or sampling client, kept alive by its heartbeats
 * (every 10 s), ended by `sessions/{id}/finish` or, without heartbeats for `tinker_session_timeout_seconds`,
 * by the sweep every API process runs (ending twice is harmless); while a job waits for devices, already
 * after `tinker_session_yield_seconds` without heartbeats (its program has gone: the SDK heartbeats from a
 * thread of its own), so that a dead session's runner does not hold them. Ending a session ends its
 * runners. A session, like everything in it, is its owner's alone: anyone else gets 404.
 */
@Injectable()
export class TinkerSessions implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('TinkerSessions');
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: TinkerRepository,
    private readonly runners: TinkerRunners,
    private readonly calls: SessionCallsRepository,
    private readonly jobs: JobsRepository,
  ) {}

  onModuleInit(): void {
    const timeout = this.config.values.tinker_session_timeout_seconds;
    this.timer = setInterval(() => void this.sweep(), Math.min(10, Math.max(1, timeout / 4)) * 1000);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** `create_session`; a retry of the same submission (its `X-Idempotency-Key`) gets the same session. */
  async create(caller: Principal, body: CreateSessionRequest, idempotencyKey: string | null): Promise<CreateSessionResponse> {
    if (idempotencyKey !== null) {
      const earlier = await this.repo.findSessionByKey(caller.userId, idempotencyKey);
      if (earlier) return { session_id: earlier.id, type: 'create_session' };
    }
    const max = this.config.values.tinker_max_sessions_per_user;
    if ((await this.repo.countActiveSessions(caller.userId)) >= max) {
      throw new AppError(
        ErrorCode.LIMIT_EXCEEDED,
        `You have ${max} active Tinker sessions, the most this server allows one user (operator setting tinker_max_sessions_per_user); close one (ServiceClient.close) or let it expire`,
        { details: { setting: 'tinker_max_sessions_per_user', limit: max } },
      );
    }
    const now = Date.now();
    const session: TinkerSessionEntity = {
      id: randomUUID(),
      ownerId: caller.userId,
      state: 'active',
      sdkVersion: body.sdk_version,
      tags: body.tags,
      userMetadata: body.user_metadata ?? null,
      idempotencyKey,
      createdAt: now,
      heartbeatAt: now,
      endedAt: null,
      endReason: null,
    };
    await this.repo.insertSession(session);
    return { session_id: session.id, type: 'create_session', info_message: `OpenTinker: session ${session.id}` };
  }

  /** The caller's session, or 404. */
  async owned(caller: Principal, id: string): Promise<TinkerSessionEntity> {
    const session = await this.repo.findSession(id);
    if (!session || session.ownerId !== caller.userId) throw new AppError(ErrorCode.NOT_FOUND, `Tinker session ${id} not found`, { field: 'session_id' });
    return session;
  }

  /** The caller's session while it lives; 410 once it finished or expired. */
  async active(caller: Principal, id: string): Promise<TinkerSessionEntity> {
    const session = await this.owned(caller, id);
    if (session.state !== 'active') throw ended(session);
    return session;
  }

  /** `session_heartbeat`: 200 while the session lives, 410 after (the SDK's heartbeat loop stops on it). */
  async heartbeat(caller: Principal, id: string): Promise<void> {
    await this.active(caller, id);
    await this.repo.heartbeat(id, Date.now());
  }

  /** `sessions/{id}/finish` (`ServiceClient.close`): ends the session and its runners. Finishing again is fine. */
  async finish(caller: Principal, id: string, body: ClientSessionFinishRequest): Promise<void> {
    const session = await this.owned(caller, id);
    const reason = `finished by the client (${body.reason.type}${body.detail ? `: ${body.detail.slice(0, 500)}` : ''})`;
    await this.end(session, 'finished', reason);
  }

  private async end(session: TinkerSessionEntity, state: 'finished' | 'expired', reason: string): Promise<void> {
    await this.repo.endSession(session.id, state, reason, Date.now());
    for (const runner of await this.repo.runnersOf(session.id)) await this.runners.end(runner.jobId, session.ownerId, reason);
  }

  /** Expires the sessions whose heartbeats stopped, and drops answered requests past `tinker_result_keep_seconds`. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const timeout = this.config.values.tinker_session_timeout_seconds;
      const now = Date.now();
      for (const session of await this.repo.silentSessions(now - timeout * 1000, SWEEP_BATCH)) {
        await this.end(session, 'expired', `no heartbeat for ${timeout} s (operator setting tinker_session_timeout_seconds)`);
      }
      const yieldAfter = Math.min(timeout, this.config.values.tinker_session_yield_seconds);
      if (yieldAfter < timeout && (await this.jobs.queued(1)).length > 0) {
        for (const session of await this.repo.silentSessions(now - yieldAfter * 1000, SWEEP_BATCH)) {
          await this.end(session, 'expired', `no heartbeat for ${yieldAfter} s while a job waited for devices (operator setting tinker_session_yield_seconds)`);
        }
      }
      const keep = this.config.values.tinker_result_keep_seconds * 1000;
      await this.calls.deleteFinished(await this.repo.runnerJobIds(10_000), now - keep);
    } catch (error) {
      this.logger.warn(`Tinker session sweep: ${(error as Error).message}`);
    } finally {
      this.sweeping = false;
    }
  }
}

function ended(session: TinkerSessionEntity): AppError {
  return new AppError(ErrorCode.GONE, `Tinker session ${session.id} is over: ${session.endReason ?? session.state}`, { field: 'session_id' });
}
