import { Injectable } from '@nestjs/common';
import { DataSource, In, Repository } from 'typeorm';
import { FINAL_STATES, JOB_STATES, JobEntity } from '../jobs/job.entity';
import { DatasetEntity } from './dataset.entity';

/** Dataset rows, and the one question datasets ask of jobs: which unfinished job names a dataset. */
@Injectable()
export class DatasetsRepository {
  private readonly datasets: Repository<DatasetEntity>;
  private readonly jobs: Repository<JobEntity>;

  constructor(dataSource: DataSource) {
    this.datasets = dataSource.getRepository(DatasetEntity);
    this.jobs = dataSource.getRepository(JobEntity);
  }

  async insert(dataset: DatasetEntity): Promise<void> {
    await this.datasets.insert(dataset as never);
  }

  findById(id: string): Promise<DatasetEntity | null> {
    return this.datasets.findOneBy({ id });
  }

  /** One page, newest first, and the total; `ownerId` undefined lists everyone's. */
  async list(q: { ownerId?: string; limit: number; offset: number }): Promise<{ items: DatasetEntity[]; total: number }> {
    const [items, total] = await this.datasets.findAndCount({
      where: q.ownerId ? { ownerId: q.ownerId } : {},
      order: { createdAt: 'DESC', id: 'DESC' },
      take: q.limit,
      skip: q.offset,
    });
    return { items, total };
  }

  /** Bytes of one owner's stored datasets. */
  async bytesOf(ownerId: string): Promise<number> {
    const row = await this.datasets.createQueryBuilder('d').select('COALESCE(SUM(d.bytes), 0)', 'total').where({ ownerId }).getRawOne<{ total: string | number }>();
    return Number(row?.total ?? 0);
  }

  async delete(id: string): Promise<void> {
    await this.datasets.delete({ id });
  }

  /**
   * Ids of unfinished jobs (queued, starting, running) whose spec names the dataset. The spec is stored
   * as JSON text, so a LIKE on the uuid narrows the rows; parsing confirms it is one of the dataset keys.
   */
  async unfinishedJobsUsing(datasetId: string): Promise<string[]> {
    const unfinished = JOB_STATES.filter((s) => !FINAL_STATES.includes(s));
    const rows = await this.jobs
      .createQueryBuilder('j')
      .select(['j.id', 'j.spec'])
      .where({ state: In(unfinished) })
      .andWhere('j.spec LIKE :needle', { needle: `%${datasetId}%` })
      .getMany();
    return rows.filter((job) => namesDataset(job.spec, datasetId)).map((job) => job.id);
  }
}

function namesDataset(spec: Record<string, unknown>, datasetId: string): boolean {
  const env = spec.environment as { dataset?: unknown; val_dataset?: unknown } | undefined;
  return env?.dataset === datasetId || env?.val_dataset === datasetId;
}
