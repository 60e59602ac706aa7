import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { ApiKeyEntity } from './api-key.entity';
import { displayPrefix, generateApiKey, hashApiKey, hashOperatorKey, verifyOperatorKey } from './api-key';
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
   * added to the existing admin, so an operator can always get back in.
   */
  async ensureAdmin(): Promise<{ created: boolean; key?: string }> {
    const configured = this.config.values.admin_key;
    const admin = await this.repo.findAdmin();
    if (!admin) {
      const key = configured ?? generateApiKey();
      const user = this.newUser('admin', 'admin');
      const entity = configured ? await this.newOperatorKey(user.id, 'bootstrap', configured) : this.newKey(user.id, 'bootstrap', key);
      try {
        await this.repo.createUserWithKey(user, entity);
      } catch (error) {
        // Another process created the admin first (API and worker booting together).
        if (await this.repo.findAdmin()) return { created: false };
        throw error;
      }
      this.logger.log('Created the admin user');
      return { created: true, key: configured ? undefined : key };
    }
    if (configured) await this.keepOperatorKey(admin.id, configured);
    return { created: false };
  }

  /**
   * Makes sure the configured key works, stored with the slow hash: added to the admin when missing, or
   * re-hashed when an older install stored it with SHA-256.
   */
  private async keepOperatorKey(adminId: string, configured: string): Promise<void> {
    const fast = await this.repo.findKeyByHash(hashApiKey(configured));
    if (fast) {
      await this.repo.setKeyHash(fast.id, await hashOperatorKey(configured));
      this.auth.forget();
      return;
    }
    for (const { key } of await this.repo.findActiveOperatorKeys()) if (await verifyOperatorKey(configured, key.hash)) return;
    await this.repo.insertKey(await this.newOperatorKey(adminId, 'configured', configured)).catch(() => undefined);
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
    const key = generateApiKey();
    const entity = this.newKey(user.id, 'default', key);
    try {
      await this.repo.createUserWithKey(user, entity);
    } catch (error) {
      if (await this.repo.findUserByName(name)) {
        throw new AppError(ErrorCode.CONFLICT, `User name ${name} is taken`, { field: 'name' });
      }
      throw error;
    }
    return { user, entity, key };
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
    const key = generateApiKey();
    const entity = this.newKey(caller.userId, name, key);
    await this.repo.insertKey(entity);
    return { entity, key };
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
      this.auth.forget(key.hash);
    }
    return key;
  }

  private newUser(name: string, role: Role): UserEntity {
    return Object.assign(new UserEntity(), { id: randomUUID(), name, role, createdAt: Date.now() });
  }

  /** A key the operator chose: stored with scrypt, shown in listings by its `otk_` only. */
  private async newOperatorKey(userId: string, name: string, key: string): Promise<ApiKeyEntity> {
    return Object.assign(this.newKey(userId, name, key), { prefix: 'otk_…', hash: await hashOperatorKey(key) });
  }

  private newKey(userId: string, name: string, key: string): ApiKeyEntity {
    return Object.assign(new ApiKeyEntity(), {
      id: randomUUID(),
      userId,
      name,
      prefix: displayPrefix(key),
      hash: hashApiKey(key),
      createdAt: Date.now(),
      lastUsedAt: null,
      revokedAt: null,
    });
  }
}
