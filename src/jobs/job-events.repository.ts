import { Injectable } from '@nestjs/common';
import { DataSource, MoreThan, Repository } from 'typeorm';
import { JobArtifactEntity } from './job-artifact.entity';
import { JobEventEntity, JobEventType } from './job-event.entity';
import { JobMetricEntity } from './job-metric.entity';

export interface MetricPoint {
  step: number;
  name: string;
  value: number;
}

/** What a job produces while it runs: its event stream, metric series and artifacts. */
@Injectable()
export class JobEventsRepository {
  private readonly events: Repository<JobEventEntity>;
  private readonly metrics: Repository<JobMetricEntity>;
  private readonly artifacts: Repository<JobArtifactEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.events = dataSource.getRepository(JobEventEntity);
    this.metrics = dataSource.getRepository(JobMetricEntity);
    this.artifacts = dataSource.getRepository(JobArtifactEntity);
  }

  async append(jobId: string, type: JobEventType, data: unknown): Promise<void> {
    await this.events.insert({ jobId, type, data: data as object, createdAt: Date.now() });
  }

  /** Metric points go to the series table and, as one event, to the stream — in one transaction. */
  async appendMetrics(jobId: string, points: MetricPoint[]): Promise<void> {
    if (points.length === 0) return;
    const now = Date.now();
    await this.dataSource.transaction(async (m) => {
      await m.insert(JobMetricEntity, points.map((p) => ({ jobId, ...p, createdAt: now })));
      await m.insert(JobEventEntity, { jobId, type: 'metrics', data: { points }, createdAt: now });
    });
  }

  after(jobId: string, afterId: number, limit: number, type?: JobEventType): Promise<JobEventEntity[]> {
    return this.events.find({
      where: { jobId, id: MoreThan(afterId), ...(type ? { type } : {}) },
      order: { id: 'ASC' },
      take: limit,
    });
  }

  series(jobId: string, opts: { name?: string; afterStep?: number; limit: number }): Promise<JobMetricEntity[]> {
    return this.metrics.find({
      where: { jobId, ...(opts.name ? { name: opts.name } : {}), ...(opts.afterStep !== undefined ? { step: MoreThan(opts.afterStep) } : {}) },
      order: { step: 'ASC', id: 'ASC' },
      take: opts.limit,
    });
  }

  async putArtifact(artifact: Omit<JobArtifactEntity, 'id'>): Promise<void> {
    await this.artifacts.upsert(artifact, ['jobId', 'name']);
  }

  listArtifacts(jobId: string): Promise<JobArtifactEntity[]> {
    return this.artifacts.find({ where: { jobId }, order: { name: 'ASC' } });
  }

  findArtifact(jobId: string, name: string): Promise<JobArtifactEntity | null> {
    return this.artifacts.findOneBy({ jobId, name });
  }
}
