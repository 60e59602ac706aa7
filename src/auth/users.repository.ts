import { Injectable } from '@nestjs/common';
import { DataSource, IsNull, Like, Repository } from 'typeorm';
import { OPERATOR_HASH_PREFIX } from './api-key';
import { ApiKeyEntity } from './api-key.entity';
import { UserEntity } from './user.entity';

/** Users and their API keys: all database access of the auth module. */
@Injectable()
export class UsersRepository {
  private readonly users: Repository<UserEntity>;
  private readonly keys: Repository<ApiKeyEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.users = dataSource.getRepository(UserEntity);
    this.keys = dataSource.getRepository(ApiKeyEntity);
  }

  findUser(id: string): Promise<UserEntity | null> {
    return this.users.findOneBy({ id });
  }

  findUserByName(name: string): Promise<UserEntity | null> {
    return this.users.findOneBy({ name });
  }

  findAdmin(): Promise<UserEntity | null> {
    return this.users.findOne({ where: { role: 'admin' }, order: { createdAt: 'ASC' } });
  }

  listUsers(): Promise<UserEntity[]> {
    return this.users.find({ order: { createdAt: 'ASC' } });
  }

  /** Creates a user together with its first key, atomically. */
  async createUserWithKey(user: UserEntity, key: ApiKeyEntity): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.insert(UserEntity, user);
      await m.insert(ApiKeyEntity, key);
    });
  }

  async insertKey(key: ApiKeyEntity): Promise<void> {
    await this.keys.insert(key);
  }

  /** The live key with this hash and its owner, in one query. */
  async findActiveKeyByHash(hash: string): Promise<{ key: ApiKeyEntity; user: UserEntity } | null> {
    const key = await this.keys.findOneBy({ hash, revokedAt: IsNull() });
    if (!key) return null;
    const user = await this.users.findOneBy({ id: key.userId });
    return user ? { key, user } : null;
  }

  /** Live keys chosen by an operator (stored with scrypt, see `hashOperatorKey`) and their owners. */
  async findActiveOperatorKeys(): Promise<Array<{ key: ApiKeyEntity; user: UserEntity }>> {
    const keys = await this.keys.findBy({ hash: Like(`${OPERATOR_HASH_PREFIX}%`), revokedAt: IsNull() });
    const out: Array<{ key: ApiKeyEntity; user: UserEntity }> = [];
    for (const key of keys) {
      const user = await this.users.findOneBy({ id: key.userId });
      if (user) out.push({ key, user });
    }
    return out;
  }

  async setKeyHash(id: string, hash: string): Promise<void> {
    await this.keys.update({ id }, { hash });
  }

  findKeyByHash(hash: string): Promise<ApiKeyEntity | null> {
    return this.keys.findOneBy({ hash });
  }

  listKeys(userId: string): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { userId }, order: { createdAt: 'ASC' } });
  }

  findKey(id: string): Promise<ApiKeyEntity | null> {
    return this.keys.findOneBy({ id });
  }

  async revokeKey(id: string, at: number): Promise<void> {
    await this.keys.update({ id, revokedAt: IsNull() }, { revokedAt: at });
  }

  async touchKey(id: string, at: number): Promise<void> {
    await this.keys.update({ id }, { lastUsedAt: at });
  }
}
