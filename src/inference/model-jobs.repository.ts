import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { JobEntity } from '../jobs/job.entity';

/** The few job columns serving needs: which of a user's jobs carry a name, newest first. */
export interface JobRef {
  id: string;
  name: string | null;
  kind: string;
  createdAt: number;
}

/** Job lookups for model names (`POST /v1/chat/completions`, `GET /v1/models`). */
@Injectable()
export class ModelJobsRepository {
  private readonly jobs: Repository<JobEntity>;

  constructor(dataSource: DataSource) {
    this.jobs = dataSource.getRepository(JobEntity);
  }

  /** The owner's jobs with this name, newest first (at most `limit`). */
  async byName(ownerId: string, name: string, limit = 10): Promise<JobRef[]> {
    return this.jobs.find({ select: { id: true, name: true, kind: true, createdAt: true }, where: { ownerId, name }, order: { createdAt: 'DESC' }, take: limit });
  }

  /** The owner's newest jobs. */
  async recent(ownerId: string, limit: number): Promise<JobRef[]> {
    return this.jobs.find({ select: { id: true, name: true, kind: true, createdAt: true }, where: { ownerId }, order: { createdAt: 'DESC', id: 'DESC' }, take: limit });
  }
}
