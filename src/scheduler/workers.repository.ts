import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, MoreThan, Repository } from 'typeorm';
import { WorkerEntity } from './worker.entity';

@Injectable()
export class WorkersRepository {
  private readonly workers: Repository<WorkerEntity>;

  constructor(dataSource: DataSource) {
    this.workers = dataSource.getRepository(WorkerEntity);
  }

  async register(worker: WorkerEntity): Promise<void> {
    await this.workers.upsert(worker, ['id']);
  }

  async heartbeat(id: string, at: number): Promise<void> {
    await this.workers.update({ id }, { lastSeenAt: at, stoppedAt: null });
  }

  /** The devices the API's model servers hold on this worker's machine. */
  async setModelServerDevices(id: string, ids: string[]): Promise<void> {
    await this.workers.update({ id }, { modelServerDevices: ids });
  }

  async stopped(id: string, at: number): Promise<void> {
    await this.workers.update({ id }, { stoppedAt: at, lastSeenAt: at });
  }

  /** Workers that heartbeated since `since` and have not stopped. */
  alive(since: number): Promise<WorkerEntity[]> {
    return this.workers.find({ where: { lastSeenAt: MoreThan(since), stoppedAt: IsNull() }, order: { startedAt: 'ASC' } });
  }

  /** Every worker the cluster has known, running or not (what jobs it could ever place). */
  all(): Promise<WorkerEntity[]> {
    return this.workers.find();
  }

  find(id: string): Promise<WorkerEntity | null> {
    return this.workers.findOneBy({ id });
  }
}
