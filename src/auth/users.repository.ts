import { Injectable } from '@nestjs/common';
import { DataSource, In, IsNull, Like, Repository } from 'typeorm';
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

  /**
   * The live keys with this key id (one, but for a clash of ids issued before generated ids) and their
   * owners. Every request with an unknown id runs this, a flood of bad keys included, so the first step is
   * one plain statement (TypeORM's query building cost more than the query); rows come only for real keys.
   */
  async findActiveKeysByKeyId(keyId: string): Promise<Array<{ key: ApiKeyEntity; user: UserEntity }>> {
    const mark = this.dataSource.options.type === 'postgres' ? '$1' : '?';
    const ids: Array<{ id: string }> = await this.dataSource.query(`SELECT "id" FROM "api_keys" WHERE "key_id" = ${mark} AND "revoked_at" IS NULL`, [keyId]);
    return ids.length === 0 ? [] : this.withOwners(await this.keys.findBy({ id: In(ids.map((r) => r.id)) }));
  }

  /** One live key by its row id, with its owner. */
  async findActiveKey(id: string): Promise<{ key: ApiKeyEntity; user: UserEntity } | null> {
    const key = await this.keys.findOneBy({ id, revokedAt: IsNull() });
    return key ? ((await this.withOwners([key]))[0] ?? null) : null;
  }

  /** Live keys chosen by an operator (stored with scrypt, see `hashOperatorKey`) that carry no key id, and their owners. */
  async findActiveOperatorKeys(): Promise<Array<{ key: ApiKeyEntity; user: UserEntity }>> {
    return this.withOwners(await this.keys.findBy({ hash: Like(`${OPERATOR_HASH_PREFIX}%`), keyId: IsNull(), revokedAt: IsNull() }));
  }

  /** Stores a key an operator chose with the slow hash, and with nothing of its text (`prefix` `otk_…`, no id). */
  async setOperatorKeyHash(id: string, hash: string, prefix: string, keyId: string | null): Promise<void> {
    await this.keys.update({ id }, { hash, prefix, keyId });
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

  private async withOwners(keys: ApiKeyEntity[]): Promise<Array<{ key: ApiKeyEntity; user: UserEntity }>> {
    if (keys.length === 0) return [];
    const users = new Map((await this.users.findBy({ id: In([...new Set(keys.map((k) => k.userId))]) })).map((u) => [u.id, u]));
    return keys.flatMap((key) => {
      const user = users.get(key.userId);
      return user ? [{ key, user }] : [];
    });
  }

  async touchKey(id: string, at: number): Promise<void> {
    await this.keys.update({ id }, { lastUsedAt: at });
  }
}
