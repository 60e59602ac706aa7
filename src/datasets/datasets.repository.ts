import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { DatasetEntity } from './dataset.entity';

/** Dataset rows. */
@Injectable()
export class DatasetsRepository {
  private readonly datasets: Repository<DatasetEntity>;

  constructor(dataSource: DataSource) {
    this.datasets = dataSource.getRepository(DatasetEntity);
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
}
