import { Injectable } from '@nestjs/common';
import { DataSource, MoreThan, Repository } from 'typeorm';
import { JobArtifactEntity } from './job-artifact.entity';
import { JobEventEntity, JobEventType } from './job-event.entity';
import { JobMetricEntity } from './job-metric.entity';
import { JobEntity, NEXT_VERSION, type JobProgress } from './job.entity';

export interface MetricPoint {
  step: number;
  name: string;
  value: number;
}

/** A job runner's output to record: the stream events (metric points travel in `metrics` events). */
export type JobOutputEvent = { type: 'metrics'; data: { points: MetricPoint[] } } | { type: 'progress'; data: JobProgress } | { type: 'log'; data: { text: string } };

export interface JobOutput {
  /** The job's latest progress, saved on its row (null: unchanged). */
  progress: JobProgress | null;
  events: JobOutputEvent[];
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

  /**
   * What a running job reported since the last call, in one transaction: its latest progress (the jobs
   * row), its events in the order given (one multi-row insert, so their ids keep that order), and the
   * metric points of its `metrics` events in the series table. A job reports several things per step
   * (progress, metrics, log text); one transaction of three statements rather than a transaction per
   * statement keeps the server's share of the machine small while the job runner computes beside it.
   */
  async appendOutput(jobId: string, output: JobOutput): Promise<void> {
    const { progress, events } = output;
    if (!progress && events.length === 0) return;
    const now = Date.now();
    const points = events.flatMap((e) => (e.type === 'metrics' ? e.data.points : []));
    await this.dataSource.transaction(async (m) => {
      if (progress) await m.update(JobEntity, { id: jobId }, { progress, ...NEXT_VERSION });
      if (points.length > 0)
        await m.insert(
          JobMetricEntity,
          points.map((p) => ({ jobId, ...p, createdAt: now })),
        );
      if (events.length > 0)
        await m.insert(
          JobEventEntity,
          events.map((e) => ({ jobId, type: e.type, data: e.data as object, createdAt: now })),
        );
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

  /**
   * Drops the metric points after `step` (except series whose names start with one of `keepPrefixes`):
   * a job resuming from a checkpoint at `step` reports those steps again.
   */
  async rewindMetrics(jobId: string, step: number, keepPrefixes: readonly string[]): Promise<void> {
    const q = this.metrics.createQueryBuilder().delete().where('job_id = :jobId AND step > :step', { jobId, step });
    keepPrefixes.forEach((prefix, i) => q.andWhere(`name NOT LIKE :keep${i}`, { [`keep${i}`]: `${prefix.replace(/[\\%_]/g, '')}%` }));
    await q.execute();
  }

  /** The latest point of each of `names` for each of `jobIds` (the last one recorded). */
  async latestPoints(jobIds: readonly string[], names: readonly string[]): Promise<Array<{ jobId: string; name: string; value: number }>> {
    if (jobIds.length === 0 || names.length === 0) return [];
    const rows: Array<{ jobId: string; name: string; value: number | string }> = await this.metrics
      .createQueryBuilder('m')
      .select('m.job_id', 'jobId')
      .addSelect('m.name', 'name')
      .addSelect('m.value', 'value')
      .where('m.job_id IN (:...jobIds)', { jobIds })
      .andWhere('m.name IN (:...names)', { names })
      // Points are inserted in the order a job reports them: the highest id is the latest step.
      .andWhere('m.id = (SELECT MAX(l.id) FROM job_metrics l WHERE l.job_id = m.job_id AND l.name = m.name)')
      .getRawMany();
    return rows.map((r) => ({ jobId: r.jobId, name: r.name, value: Number(r.value) }));
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
