import { Injectable } from '@nestjs/common';
import { DataSource, In, LessThan, Repository } from 'typeorm';
import { SessionCallEntity } from './session-call.entity';

/** Calls to job runners: inserted by the API, claimed and finished by the worker that runs the job. */
@Injectable()
export class SessionCallsRepository {
  private readonly calls: Repository<SessionCallEntity>;

  constructor(dataSource: DataSource) {
    this.calls = dataSource.getRepository(SessionCallEntity);
  }

  find(jobId: string, callId: string): Promise<SessionCallEntity | null> {
    return this.calls.findOneBy({ jobId, callId });
  }

  findById(id: number): Promise<SessionCallEntity | null> {
    return this.calls.findOneBy({ id });
  }

  list(jobId: string, limit: number): Promise<SessionCallEntity[]> {
    return this.calls.find({ where: { jobId }, order: { id: 'DESC' }, take: limit });
  }

  /** Calls of a job not answered yet (pending or handed to the runner). */
  countOpen(jobId: string): Promise<number> {
    return this.calls.countBy({ jobId, state: In(['pending', 'running']) });
  }

  /**
   * Records a new call, or returns the existing one with that call id (a client retry). `created` says
   * which, so the caller can refuse a reused id that carries a different request.
   */
  async insertOnce(jobId: string, callId: string, op: string, args: Record<string, unknown>): Promise<{ call: SessionCallEntity; created: boolean }> {
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

  /**
   * Up to `limit` of a job's oldest pending calls, each claimed (pending → running) so it is handed out
   * once; a call another worker claimed first is left out.
   */
  async claimPending(jobId: string, limit: number): Promise<SessionCallEntity[]> {
    const pending = await this.calls.find({ where: { jobId, state: 'pending' }, order: { id: 'ASC' }, take: limit });
    const claimed: SessionCallEntity[] = [];
    for (const call of pending) {
      const startedAt = Date.now();
      const res = await this.calls.update({ id: call.id, state: 'pending' }, { state: 'running', startedAt });
      if (res.affected) claimed.push({ ...call, state: 'running', startedAt });
    }
    return claimed;
  }

  async finish(id: number, outcome: { result: unknown } | { error: string }): Promise<void> {
    const values = 'error' in outcome ? { state: 'failed' as const, error: outcome.error } : { state: 'succeeded' as const, result: outcome.result as object };
    await this.calls.update({ id, state: In(['pending', 'running']) }, { ...values, finishedAt: Date.now() });
  }

  /** Fails every unfinished call of a job that has ended. */
  async failOpen(jobId: string, error: string): Promise<void> {
    await this.calls.update({ jobId, state: In(['pending', 'running']) }, { state: 'failed', error, finishedAt: Date.now() });
  }

  /** Deletes the answered calls of these jobs that finished before `before` (ms since epoch); returns how many. */
  async deleteFinished(jobIds: readonly string[], before: number): Promise<number> {
    if (jobIds.length === 0) return 0;
    const res = await this.calls.delete({ jobId: In([...jobIds]), state: In(['succeeded', 'failed']), finishedAt: LessThan(before) });
    return res.affected ?? 0;
  }
}
