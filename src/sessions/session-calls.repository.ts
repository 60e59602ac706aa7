import { Injectable } from '@nestjs/common';
import { DataSource, In, Repository } from 'typeorm';
import { SessionCallEntity, SessionOp } from './session-call.entity';

/** Session calls: inserted by the API, claimed and finished by the worker that runs the session. */
@Injectable()
export class SessionCallsRepository {
  private readonly calls: Repository<SessionCallEntity>;

  constructor(dataSource: DataSource) {
    this.calls = dataSource.getRepository(SessionCallEntity);
  }

  find(jobId: string, callId: string): Promise<SessionCallEntity | null> {
    return this.calls.findOneBy({ jobId, callId });
  }

  list(jobId: string, limit: number): Promise<SessionCallEntity[]> {
    return this.calls.find({ where: { jobId }, order: { id: 'DESC' }, take: limit });
  }

  /**
   * Records a new call, or returns the existing one with that call id (a client retry). `created` says
   * which, so the caller can refuse a reused id that carries a different request.
   */
  async insertOnce(jobId: string, callId: string, op: SessionOp, args: Record<string, unknown>): Promise<{ call: SessionCallEntity; created: boolean }> {
    const existing = await this.find(jobId, callId);
    if (existing) return { call: existing, created: false };
    try {
      await this.calls.insert({ jobId, callId, op, args: args as object, state: 'pending', error: null, createdAt: Date.now() });
    } catch (error) {
      // Two retries raced: the unique index let one in; answer with that one.
      const raced = await this.find(jobId, callId);
      if (raced) return { call: raced, created: false };
      throw error;
    }
    return { call: (await this.find(jobId, callId))!, created: true };
  }

  /** The oldest pending call of a job, claimed (pending → running) so it is handed out once. */
  async claimNext(jobId: string): Promise<SessionCallEntity | null> {
    const next = await this.calls.findOne({ where: { jobId, state: 'pending' }, order: { id: 'ASC' } });
    if (!next) return null;
    const res = await this.calls.update({ id: next.id, state: 'pending' }, { state: 'running', startedAt: Date.now() });
    return res.affected ? { ...next, state: 'running' } : null;
  }

  async finish(id: number, outcome: { result: unknown } | { error: string }): Promise<void> {
    const values = 'error' in outcome ? { state: 'failed' as const, error: outcome.error } : { state: 'succeeded' as const, result: outcome.result as object };
    await this.calls.update({ id, state: In(['pending', 'running']) }, { ...values, finishedAt: Date.now() });
  }

  /** Fails every unfinished call of a session that has ended. */
  async failOpen(jobId: string, error: string): Promise<void> {
    await this.calls.update({ jobId, state: In(['pending', 'running']) }, { state: 'failed', error, finishedAt: Date.now() });
  }
}
