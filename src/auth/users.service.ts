import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { ApiKeyEntity } from './api-key.entity';
import { displayPrefix, generateApiKey, hashApiKey, hashOperatorKey, isOperatorHash, parseApiKey, verifyOperatorKey } from './api-key';
import { AuthService } from './auth.service';
import { isAdmin, Principal } from './principal';
import { Role, UserEntity } from './user.entity';
import { UsersRepository } from './users.repository';

export interface IssuedKey {
  entity: ApiKeyEntity;
  /** The secret, returned once and never stored. */
  key: string;
}

@Injectable()
export class UsersService {
  private readonly logger = new Logger('Users');

  constructor(
    private readonly repo: UsersRepository,
    private readonly auth: AuthService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Makes sure an admin exists. On first start it creates one with `OPENTINKER_ADMIN_KEY` or a fresh key,
   * which it returns so the caller can print it once. A configured key missing from the database is
   * added to the existing admin, so an operator can always get back in. The configured key is verified
   * here once, so this process recognises it without a slow check afterwards.
   */
  async ensureAdmin(): Promise<{ created: boolean; key?: string }> {
    const configured = this.config.values.admin_key;
    if (configured && !parseApiKey(configured)) {
      this.logger.error('admin_key looks like a generated key with a wrong checksum (a typo?): it cannot sign in; choose another');
    }
    const admin = await this.repo.findAdmin();
    if (!admin) {
      const user = this.newUser('admin', 'admin');
      const generated = configured ? undefined : generateApiKey();
      const entity = configured ? await this.newOperatorKey(user.id, 'bootstrap', configured) : this.newKey(user.id, 'bootstrap', generated!);
      try {
        await this.repo.createUserWithKey(user, entity);
      } catch (error) {
        // Another process created the admin first (API and worker booting together).
        const winner = await this.repo.findAdmin();
        if (winner) {
          if (configured) await this.keepOperatorKey(winner.id, configured);
          return { created: false };
        }
        throw error;
      }
      this.logger.log('Created the admin user');
      if (configured) this.auth.recognise(configured, entity.id);
      return { created: true, key: generated?.key };
    }
    if (configured) await this.keepOperatorKey(admin.id, configured);
    await this.warnOfUnverifiedOperatorKeys();
    return { created: false };
  }

  /** Operator-chosen keys this process cannot recognise keep a slow check open to bad keys: say so once. */
  private async warnOfUnverifiedOperatorKeys(): Promise<void> {
    const others = (await this.repo.findActiveOperatorKeys()).filter((r) => !this.auth.recognises(r.key.id));
    if (others.length === 0) return;
    this.logger.warn(
      `${others.length} operator-chosen API key(s) (${others.map((r) => `"${r.key.name}" ${r.key.id}`).join(', ')}) are not this server's admin_key: ` +
        'until one is used here, keys that are not found cost a scrypt check (at most auth_key_checks at once). Revoke the ones no longer in use.',
    );
  }

  /**
   * Makes sure the configured key works, stored with the slow hash: added to the admin when missing, or
   * re-hashed when an older install stored it with SHA-256 (and then its listed prefix and id, which came
   * from its text, are dropped).
   */
  private async keepOperatorKey(adminId: string, configured: string): Promise<void> {
    const fast = await this.repo.findKeyByHash(hashApiKey(configured));
    if (fast) {
      await this.repo.setOperatorKeyHash(fast.id, await hashOperatorKey(configured), OPERATOR_KEY_LISTED, generatedKeyId(configured));
      this.auth.forget();
      this.auth.recognise(configured, fast.id);
      return;
    }
    const id = generatedKeyId(configured);
    const stored = id === null ? await this.repo.findActiveOperatorKeys() : (await this.repo.findActiveKeysByKeyId(id)).filter((r) => isOperatorHash(r.key.hash));
    for (const { key } of stored) {
      if (await verifyOperatorKey(configured, key.hash)) {
        this.auth.recognise(configured, key.id);
        return;
      }
    }
    const entity = await this.newOperatorKey(adminId, 'configured', configured);
    await this.repo.insertKey(entity).then(
      () => this.auth.recognise(configured, entity.id),
      () => undefined,
    );
  }

  /** Creates a user and its first key. Admins may create admins; open registration creates users. */
  async createUser(caller: Principal | undefined, name: string, role: Role = 'user'): Promise<{ user: UserEntity } & IssuedKey> {
    if (!caller && !this.config.values.open_registration) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'Registration is closed: an admin must create users', {
        field: 'authorization',
      });
    }
    if (caller && !isAdmin(caller)) throw new AppError(ErrorCode.FORBIDDEN, 'Only admins create users');
    if (!caller && role !== 'user') {
      throw new AppError(ErrorCode.FORBIDDEN, 'Self-registration creates plain users only', { field: 'role' });
    }
    if (await this.repo.findUserByName(name)) {
      throw new AppError(ErrorCode.CONFLICT, `User name ${name} is taken`, { field: 'name' });
    }
    const user = this.newUser(name, role);
    const generated = generateApiKey();
    const entity = this.newKey(user.id, 'default', generated);
    try {
      await this.repo.createUserWithKey(user, entity);
    } catch (error) {
      if (await this.repo.findUserByName(name)) {
        throw new AppError(ErrorCode.CONFLICT, `User name ${name} is taken`, { field: 'name' });
      }
      throw error;
    }
    return { user, entity, key: generated.key };
  }

  listUsers(caller: Principal): Promise<UserEntity[]> {
    if (!isAdmin(caller)) throw new AppError(ErrorCode.FORBIDDEN, 'Only admins list users');
    return this.repo.listUsers();
  }

  async getUser(id: string): Promise<UserEntity> {
    const user = await this.repo.findUser(id);
    if (!user) throw AppError.notFound('User', id);
    return user;
  }

  async createKey(caller: Principal, name: string): Promise<IssuedKey> {
    const generated = generateApiKey();
    const entity = this.newKey(caller.userId, name, generated);
    await this.repo.insertKey(entity);
    return { entity, key: generated.key };
  }

  listKeys(caller: Principal): Promise<ApiKeyEntity[]> {
    return this.repo.listKeys(caller.userId);
  }

  /** Revokes one of the caller's keys (admins: anyone's). Unknown and foreign ids are both 404. */
  async revokeKey(caller: Principal, id: string): Promise<ApiKeyEntity> {
    const key = await this.repo.findKey(id);
    if (!key || (key.userId !== caller.userId && !isAdmin(caller))) throw AppError.notFound('API key', id);
    if (key.revokedAt === null) {
      key.revokedAt = Date.now();
      await this.repo.revokeKey(id, key.revokedAt);
      this.auth.forget(key);
    }
    return key;
  }

  private newUser(name: string, role: Role): UserEntity {
    return Object.assign(new UserEntity(), { id: randomUUID(), name, role, createdAt: Date.now() });
  }

  /**
   * A key the operator chose: stored with scrypt, listed as `otk_…`, and with no id unless its text is in
   * the generated form (then its id is not secret, and finds the row as for any generated key).
   */
  private async newOperatorKey(userId: string, name: string, key: string): Promise<ApiKeyEntity> {
    return Object.assign(this.newKey(userId, name, { key, keyId: generatedKeyId(key) }), { prefix: OPERATOR_KEY_LISTED, hash: await hashOperatorKey(key) });
  }

  private newKey(userId: string, name: string, { key, keyId }: { key: string; keyId: string | null }): ApiKeyEntity {
    return Object.assign(new ApiKeyEntity(), {
      id: randomUUID(),
      userId,
      name,
      prefix: keyId === null ? OPERATOR_KEY_LISTED : displayPrefix(keyId),
      keyId,
      hash: hashApiKey(key),
      createdAt: Date.now(),
      lastUsedAt: null,
      revokedAt: null,
    });
  }
}

/** How a key an operator chose is listed: nothing of its text. */
const OPERATOR_KEY_LISTED = 'otk_…';

function generatedKeyId(key: string): string | null {
  const parsed = parseApiKey(key);
  return parsed?.kind === 'generated' ? parsed.keyId : null;
}
