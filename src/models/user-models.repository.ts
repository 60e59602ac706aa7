import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { UserModelEntity } from './user-model.entity';

/** Rows of uploaded models. */
@Injectable()
export class UserModelsRepository {
  private readonly models: Repository<UserModelEntity>;

  constructor(dataSource: DataSource) {
    this.models = dataSource.getRepository(UserModelEntity);
  }

  async insert(model: UserModelEntity): Promise<void> {
    await this.models.insert(model as never);
  }

  findById(id: string): Promise<UserModelEntity | null> {
    return this.models.findOneBy({ id });
  }

  /** One owner's models, newest first. */
  ofOwner(ownerId: string, limit: number): Promise<UserModelEntity[]> {
    return this.models.find({ where: { ownerId }, order: { createdAt: 'DESC', id: 'DESC' }, take: limit });
  }

  /** Bytes of one owner's stored models. */
  async bytesOf(ownerId: string): Promise<number> {
    const row = await this.models.createQueryBuilder('m').select('COALESCE(SUM(m.bytes), 0)', 'total').where({ ownerId }).getRawOne<{ total: string | number }>();
    return Number(row?.total ?? 0);
  }

  async delete(id: string): Promise<void> {
    await this.models.delete({ id });
  }
}
