import { Injectable } from '@nestjs/common';
import { AppError, ErrorCode } from '../core/app-error';
import { hashApiKey, looksLikeApiKey, sameHash } from './api-key';
import { AuthFailureLimiter } from './auth-failure-limiter';
import type { Principal } from './principal';
import { UsersRepository } from './users.repository';

/** How long a verified key is trusted without asking the database again (revocation in this process is immediate). */
const CACHE_MS = 5_000;
/** `last_used_at` is written at most this often per key, to keep reads read-only. */
const TOUCH_MS = 60_000;

@Injectable()
export class AuthService {
  private readonly cache = new Map<string, { principal: Principal; until: number; touched: number }>();

  constructor(
    private readonly users: UsersRepository,
    private readonly limiter: AuthFailureLimiter,
  ) {}

  /** Resolves an `Authorization` header to a principal, or throws 401/429. */
  async authenticate(header: string | undefined, address: string): Promise<Principal> {
    const blocked = this.limiter.blockedFor(address);
    if (blocked > 0) {
      throw new AppError(ErrorCode.AUTH_RATE_LIMITED, 'Too many failed authentications; try again later', {
        retryAfter: blocked,
        field: 'authorization',
      });
    }
    // A missing header is a client mistake, not a guess: it does not count towards the limit.
    if (!header) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'Missing Authorization header (expected: Bearer otk_…)', { field: 'authorization' });
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match || !looksLikeApiKey(match[1])) {
      throw this.fail(address, 'Malformed Authorization header (expected: Bearer otk_…)');
    }
    const hash = hashApiKey(match[1]);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.until > now) return cached.principal;

    const found = await this.users.findActiveKeyByHash(hash);
    if (!found || !sameHash(found.key.hash, hash)) throw this.fail(address, 'Invalid or revoked API key');
    const principal: Principal = {
      userId: found.user.id,
      name: found.user.name,
      role: found.user.role,
      keyId: found.key.id,
    };
    let touched = cached?.touched ?? found.key.lastUsedAt ?? 0;
    if (now - touched > TOUCH_MS) {
      touched = now;
      void this.users.touchKey(found.key.id, now).catch(() => undefined);
    }
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { principal, until: now + CACHE_MS, touched });
    return principal;
  }

  /** Drops cached verifications so a revocation takes effect at once in this process. */
  forget(keyHash?: string): void {
    if (keyHash) this.cache.delete(keyHash);
    else this.cache.clear();
  }

  private fail(address: string, message: string): AppError {
    this.limiter.recordFailure(address);
    return new AppError(ErrorCode.UNAUTHENTICATED, message, { field: 'authorization' });
  }
}
