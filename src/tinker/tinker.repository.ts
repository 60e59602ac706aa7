import { Injectable } from '@nestjs/common';
import { DataSource, In, LessThan, Repository } from 'typeorm';
import { TinkerModelEntity } from './tinker-model.entity';
import { TinkerRunnerEntity } from './tinker-runner.entity';
import { TinkerSamplerEntity } from './tinker-sampler.entity';
import { TinkerSessionEntity, type TinkerSessionState } from './tinker-session.entity';

/** The Tinker API's tables: sessions, their runner jobs, training clients and samplers. */
@Injectable()
export class TinkerRepository {
  private readonly sessions: Repository<TinkerSessionEntity>;
  private readonly runners: Repository<TinkerRunnerEntity>;
  private readonly models: Repository<TinkerModelEntity>;
  private readonly samplers: Repository<TinkerSamplerEntity>;

  constructor(dataSource: DataSource) {
    this.sessions = dataSource.getRepository(TinkerSessionEntity);
    this.runners = dataSource.getRepository(TinkerRunnerEntity);
    this.models = dataSource.getRepository(TinkerModelEntity);
    this.samplers = dataSource.getRepository(TinkerSamplerEntity);
  }

  // sessions

  findSession(id: string): Promise<TinkerSessionEntity | null> {
    return this.sessions.findOneBy({ id });
  }

  findSessionByKey(ownerId: string, idempotencyKey: string): Promise<TinkerSessionEntity | null> {
    return this.sessions.findOneBy({ ownerId, idempotencyKey });
  }

  countActiveSessions(ownerId: string): Promise<number> {
    return this.sessions.countBy({ ownerId, state: 'active' });
  }

  async insertSession(session: TinkerSessionEntity): Promise<void> {
    await this.sessions.insert(session as never);
  }

  async heartbeat(id: string, now: number): Promise<void> {
    await this.sessions.update({ id, state: 'active' }, { heartbeatAt: now });
  }

  /** Ends an active session; false when it had already ended. */
  async endSession(id: string, state: Exclude<TinkerSessionState, 'active'>, reason: string, now: number): Promise<boolean> {
    const res = await this.sessions.update({ id, state: 'active' }, { state, endReason: reason, endedAt: now });
    return (res.affected ?? 0) > 0;
  }

  /** Active sessions whose last heartbeat is older than `before`. */
  silentSessions(before: number, limit: number): Promise<TinkerSessionEntity[]> {
    return this.sessions.find({ where: { state: 'active', heartbeatAt: LessThan(before) }, take: limit });
  }

  // runners

  runnersOf(sessionId: string): Promise<TinkerRunnerEntity[]> {
    return this.runners.find({ where: { sessionId }, order: { createdAt: 'ASC' } });
  }

  findRunner(jobId: string): Promise<TinkerRunnerEntity | null> {
    return this.runners.findOneBy({ jobId });
  }

  async insertRunner(runner: TinkerRunnerEntity): Promise<void> {
    await this.runners.insert(runner);
  }

  /** Runner jobs of these owners' sessions (for pruning their answered requests). */
  async runnerJobIds(limit: number): Promise<string[]> {
    return (await this.runners.find({ select: { jobId: true }, order: { createdAt: 'DESC' }, take: limit })).map((r) => r.jobId);
  }

  // training clients

  findModel(id: string): Promise<TinkerModelEntity | null> {
    return this.models.findOneBy({ id });
  }

  modelsOfSession(sessionId: string): Promise<TinkerModelEntity[]> {
    return this.models.find({ where: { sessionId }, order: { seq: 'ASC' } });
  }

  countModels(where: { sessionId?: string; jobId?: string }): Promise<number> {
    return this.models.countBy(where);
  }

  /** The owner's training clients, newest first, and how many there are. */
  async modelsOf(ownerId: string, offset: number, limit: number): Promise<{ rows: TinkerModelEntity[]; total: number }> {
    const [rows, total] = await this.models.findAndCount({ where: { ownerId }, order: { createdAt: 'DESC', id: 'ASC' }, skip: offset, take: limit });
    return { rows, total };
  }

  modelsByIds(ids: string[]): Promise<TinkerModelEntity[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.models.findBy({ id: In(ids) });
  }

  /** Inserts a training client; false when one with that id exists already (a resubmission). */
  async insertModel(model: TinkerModelEntity): Promise<boolean> {
    if (await this.models.existsBy({ id: model.id })) return false;
    try {
      await this.models.insert(model as never);
      return true;
    } catch (error) {
      if (await this.models.existsBy({ id: model.id })) return false;
      throw error;
    }
  }

  async touchModel(id: string, now: number): Promise<void> {
    await this.models.update({ id }, { lastRequestAt: now });
  }

  // samplers

  findSampler(id: string): Promise<TinkerSamplerEntity | null> {
    return this.samplers.findOneBy({ id });
  }

  /** Inserts a sampler; false when one with that id exists already. */
  async insertSampler(sampler: TinkerSamplerEntity): Promise<boolean> {
    if (await this.samplers.existsBy({ id: sampler.id })) return false;
    try {
      await this.samplers.insert(sampler);
      return true;
    } catch (error) {
      if (await this.samplers.existsBy({ id: sampler.id })) return false;
      throw error;
    }
  }
}
