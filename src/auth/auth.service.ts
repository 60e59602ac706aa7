import { Injectable } from '@nestjs/common';
import { AppError, ErrorCode } from '../core/app-error';
import { displayPrefix, hashApiKey, looksLikeApiKey, sameHash, verifyOperatorKey } from './api-key';
import { AuthFailureLimiter } from './auth-failure-limiter';
import type { ApiKeyEntity } from './api-key.entity';
import type { Principal } from './principal';
import type { UserEntity } from './user.entity';
import { UsersRepository } from './users.repository';

/** How long a verified key is trusted without asking the database again (revocation in this process is immediate). */
const CACHE_MS = 5_000;
/** `last_used_at` is written at most this often per key, to keep reads read-only. */
const TOUCH_MS = 60_000;

/** Operator-key verifications (scrypt, ~16 MiB and tens of ms each) in flight at once. */
const MAX_SLOW_CHECKS = 4;

@Injectable()
export class AuthService {
  private readonly cache = new Map<string, { principal: Principal; until: number; touched: number }>();
  private slowChecks = 0;
  private readonly verifying = new Map<string, Promise<{ key: ApiKeyEntity; user: UserEntity } | null>>();

  constructor(
    private readonly users: UsersRepository,
    private readonly limiter: AuthFailureLimiter,
  ) {}

  /**
   * Resolves an `Authorization` header to a principal, or throws 401, or 429 with `Retry-After` while
   * the failures from this address (or against this key prefix) are over the limit. A valid key is
   * always accepted: only failures are throttled.
   */
  async authenticate(header: string | undefined, address: string): Promise<Principal> {
    // A missing header is a client mistake, not a guess: it does not count towards the limit.
    if (!header) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'Missing Authorization header (expected: Bearer otk_…)', { field: 'authorization' });
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match || !looksLikeApiKey(match[1])) {
      throw this.fail([`addr:${address}`], 'Malformed Authorization header (expected: Bearer otk_…)');
    }
    const key = match[1];
    const hash = hashApiKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.until > now) return cached.principal;

    const sources = [`addr:${address}`, `key:${displayPrefix(key)}`];
    const found = (await this.users.findActiveKeyByHash(hash)) ?? (await this.operatorKeyOnce(hash, key));
    if (!found || (!found.key.hash.startsWith('s:') && !sameHash(found.key.hash, hash))) throw this.fail(sources, 'Invalid or revoked API key');
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
    // The cache is keyed by SHA-256 of the presented key, which an operator key's stored hash is not.
    if (keyHash && !keyHash.startsWith('s:')) this.cache.delete(keyHash);
    else this.cache.clear();
  }

  /** Concurrent requests with the same key share one verification (a busy client's cache expiring). */
  private operatorKeyOnce(hash: string, key: string): Promise<{ key: ApiKeyEntity; user: UserEntity } | null> {
    let pending = this.verifying.get(hash);
    if (!pending) {
      pending = this.operatorKey(key).finally(() => this.verifying.delete(hash));
      this.verifying.set(hash, pending);
    }
    return pending;
  }

  /**
   * A key an operator chose (stored with scrypt), or null. Every key that is not a generated one costs a
   * scrypt per operator key, so at most {@link MAX_SLOW_CHECKS} run at once: under a flood of bad keys the
   * extra ones fail fast instead of queueing CPU work (generated keys never get here).
   */
  private async operatorKey(key: string): Promise<{ key: ApiKeyEntity; user: UserEntity } | null> {
    if (this.slowChecks >= MAX_SLOW_CHECKS) return null;
    this.slowChecks += 1;
    try {
      for (const candidate of await this.users.findActiveOperatorKeys()) {
        if (await verifyOperatorKey(key, candidate.key.hash)) return candidate;
      }
      return null;
    } finally {
      this.slowChecks -= 1;
    }
  }

  private fail(sources: string[], message: string): AppError {
    this.limiter.recordFailure(sources);
    const blocked = this.limiter.blockedFor(sources);
    if (blocked > 0) {
      return new AppError(ErrorCode.AUTH_RATE_LIMITED, 'Too many failed authentications; try again later (a valid key is still accepted)', {
        retryAfter: blocked,
        field: 'authorization',
      });
    }
    return new AppError(ErrorCode.UNAUTHENTICATED, message, { field: 'authorization' });
  }
}
