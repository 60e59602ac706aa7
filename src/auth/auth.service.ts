import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { hashApiKey, isOperatorHash, parseApiKey, sameHash, verifyOperatorKey, type PresentedKey } from './api-key';
import { addressSource, AuthFailureLimiter } from './auth-failure-limiter';
import type { ApiKeyEntity } from './api-key.entity';
import { KeyCheckQueue } from './key-check-queue';
import type { Principal } from './principal';
import type { UserEntity } from './user.entity';
import { UsersRepository } from './users.repository';

/** How long a row read for a key is trusted without asking the database again (revocation in this process is immediate). */
const CACHE_MS = 5_000;
/** `last_used_at` is written at most this often per key, to keep reads read-only. */
const TOUCH_MS = 60_000;
/** Entries of each cache before it is emptied (they hold live keys only, so this is never reached by bad keys). */
const MAX_CACHED = 10_000;

type Found = { key: ApiKeyEntity; user: UserEntity };

/** The request headers a key may come in. */
export interface CredentialHeaders {
  authorization?: string | string[];
  'x-api-key'?: string | string[];
}

/** The key a request presents and the header it came in (`Authorization: Bearer …` first, else `X-API-Key`), or null when none. */
export function presentedCredential(headers: CredentialHeaders): { value: string | null; field: 'authorization' | 'x-api-key' } | null {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const authorization = first(headers.authorization);
  if (authorization) return { value: /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] ?? null, field: 'authorization' };
  const apiKey = first(headers['x-api-key'])?.trim();
  return apiKey ? { value: apiKey, field: 'x-api-key' } : null;
}

/**
 * Resolves the key of a request to a principal at a cost a client cannot multiply.
 *
 * 1. The key is read without any lookup (`parseApiKey`): a malformed key, or a generated one whose
 *    checksum fails, is refused at once.
 * 2. Its key id finds the row(s) to verify (an indexed lookup): a generated key is SHA-256 of 256
 *    random bits, verified in a microsecond. An unknown id is refused without hashing anything.
 * 3. Keys an operator chose are stored with scrypt (they may be guessable) and carry no id. A process
 *    verifies such a key with scrypt once and then recognises it from memory (its id and SHA-256, never
 *    stored); `ensureAdmin` does this for the configured `admin_key` at start. So a bad key costs a
 *    scrypt only while some live operator key has not been verified by this process yet, and then only
 *    after the failure limiter, which refuses blocked addresses and key ids before any slow hash, and
 *    through a bounded queue where a valid key waits for its turn instead of failing.
 *
 * Only failures are throttled: a key found by its id, or an operator key this process recognises, is
 * accepted whatever the limiter says about its address.
 */
@Injectable()
export class AuthService {
  /** Live rows by key id, as read at most {@link CACHE_MS} ago (ids that exist only). */
  private readonly byKeyId = new Map<string, { rows: Found[]; until: number }>();
  /** Operator keys this process verified with scrypt: key id → SHA-256 of the key and its row. In memory only. */
  private readonly recognised = new Map<string, Array<{ digest: string; rowId: string }>>();
  private readonly recognisedRows = new Set<string>();
  /** Rows of recognised operator keys, re-read every {@link CACHE_MS} so a revocation elsewhere is seen. */
  private readonly rowsById = new Map<string, { row: Found | null; until: number }>();
  /** Live operator keys without a key id, as read at most {@link CACHE_MS} ago. */
  private operatorRows: { rows: Found[]; until: number } | null = null;
  private readonly touched = new Map<string, number>();
  private readonly slowChecks: KeyCheckQueue<Found | null>;

  constructor(
    private readonly users: UsersRepository,
    private readonly limiter: AuthFailureLimiter,
    config: AppConfig,
  ) {
    const v = config.values;
    this.slowChecks = new KeyCheckQueue({ concurrency: v.auth_key_checks, maxQueued: v.auth_key_check_queue, timeoutMs: v.auth_key_check_timeout_seconds * 1000 });
  }

  /**
   * Resolves the key of a request (`Authorization: Bearer …` or `X-API-Key`, as `otk_…` or the Tinker
   * SDK's `tml-otk_…`) to a principal; or throws 401, 429 with `Retry-After` while the failures from this
   * address (or against this key id) are over the limit, or 503 `OT_ERR_AUTH_BUSY` when a slow check
   * could not get its turn in time.
   */
  async authenticate(headers: CredentialHeaders, address: string): Promise<Principal> {
    const credential = presentedCredential(headers);
    // A missing key is a client mistake, not a guess: it does not count towards the limit.
    if (!credential) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'Missing API key (expected: Authorization: Bearer otk_… or X-API-Key: otk_…)', { field: 'authorization' });
    }
    const addr = addressSource(address);
    const key = credential.value === null ? null : parseApiKey(credential.value);
    if (!key) {
      throw this.fail(
        [addr],
        `Malformed ${credential.field === 'authorization' ? 'Authorization header (expected: Bearer otk_…)' : 'X-API-Key header (expected: otk_…)'}`,
        credential.field,
      );
    }
    const sources = [addr, `key:${key.keyId}`];
    const now = Date.now();
    let found = await this.recognisedKey(key, now);
    if (!found) {
      const rows = await this.rowsForKeyId(key.keyId, now);
      found = this.generatedKey(key, rows) ?? (await this.operatorKey(key, rows, sources, now));
    }
    if (!found) throw this.fail(sources, 'Invalid or revoked API key', credential.field);
    return this.principal(found, now);
  }

  /**
   * Remembers, in this process only, that `key` is the operator key of row `rowId` (verified with scrypt
   * by the caller), so it is accepted from then on without a slow check.
   */
  recognise(key: string, rowId: string): void {
    const parsed = parseApiKey(key);
    if (!parsed || this.recognisedRows.has(rowId)) return;
    this.recognised.set(parsed.keyId, [...(this.recognised.get(parsed.keyId) ?? []), { digest: hashApiKey(parsed.key), rowId }]);
    this.recognisedRows.add(rowId);
  }

  /** Whether this process has verified the operator key of this row. */
  recognises(rowId: string): boolean {
    return this.recognisedRows.has(rowId);
  }

  /** Drops what this process remembers of a key (all keys without one), so a revocation takes effect here at once. */
  forget(key?: ApiKeyEntity): void {
    this.operatorRows = null;
    if (!key) {
      this.byKeyId.clear();
      this.rowsById.clear();
      return;
    }
    if (key.keyId !== null) this.byKeyId.delete(key.keyId);
    this.rowsById.delete(key.id);
    this.unrecognise(key.id);
  }

  private async rowsForKeyId(keyId: string, now: number): Promise<Found[]> {
    const cached = this.byKeyId.get(keyId);
    if (cached && cached.until > now) return cached.rows;
    const rows = await this.users.findActiveKeysByKeyId(keyId);
    if (rows.length === 0) {
      this.byKeyId.delete(keyId);
    } else {
      if (this.byKeyId.size >= MAX_CACHED) this.byKeyId.clear();
      this.byKeyId.set(keyId, { rows, until: now + CACHE_MS });
    }
    return rows;
  }

  /** A generated key (or one issued before ids): SHA-256 against the rows its id found. */
  private generatedKey(key: PresentedKey, rows: Found[]): Found | null {
    let digest: string | undefined;
    for (const row of rows) {
      if (isOperatorHash(row.key.hash)) continue;
      digest ??= hashApiKey(key.key);
      if (sameHash(row.key.hash, digest)) return row;
    }
    return null;
  }

  /** An operator key this process has verified: memory, and its row (re-read every {@link CACHE_MS}). */
  private async recognisedKey(key: PresentedKey, now: number): Promise<Found | null> {
    const known = this.recognised.get(key.keyId);
    if (!known) return null;
    const digest = hashApiKey(key.key);
    const hit = known.find((k) => sameHash(k.digest, digest));
    if (!hit) return null;
    const row = await this.rowById(hit.rowId, now);
    if (!row) this.unrecognise(hit.rowId);
    return row;
  }

  /** A key an operator chose that this process has not verified yet: one bounded slow check, only while such keys exist. */
  private async operatorKey(key: PresentedKey, idRows: Found[], sources: string[], now: number): Promise<Found | null> {
    const candidates = [...idRows.filter((r) => isOperatorHash(r.key.hash)), ...(key.kind === 'other' ? await this.unverifiedOperatorKeys(now) : [])].filter(
      (r) => !this.recognisedRows.has(r.key.id),
    );
    // No operator key left to try, or the source is over its limit: refused without a slow hash.
    if (candidates.length === 0 || this.limiter.blockedFor(sources, now) > 0) return null;
    const found = await this.slowChecks.run(key.key, async () => {
      for (const candidate of candidates) if (await verifyOperatorKey(key.key, candidate.key.hash)) return candidate;
      return null;
    });
    if (found) this.recognise(key.key, found.key.id);
    return found;
  }

  private async unverifiedOperatorKeys(now: number): Promise<Found[]> {
    if (!this.operatorRows || this.operatorRows.until <= now) this.operatorRows = { rows: await this.users.findActiveOperatorKeys(), until: now + CACHE_MS };
    return this.operatorRows.rows;
  }

  private async rowById(rowId: string, now: number): Promise<Found | null> {
    const cached = this.rowsById.get(rowId);
    if (cached && cached.until > now) return cached.row;
    const row = await this.users.findActiveKey(rowId);
    this.rowsById.set(rowId, { row, until: now + CACHE_MS });
    return row;
  }

  private unrecognise(rowId: string): void {
    if (!this.recognisedRows.delete(rowId)) return;
    for (const [keyId, entries] of this.recognised) {
      const rest = entries.filter((e) => e.rowId !== rowId);
      if (rest.length) this.recognised.set(keyId, rest);
      else this.recognised.delete(keyId);
    }
  }

  private principal(found: Found, now: number): Principal {
    const last = this.touched.get(found.key.id) ?? found.key.lastUsedAt ?? 0;
    if (now - last > TOUCH_MS) {
      if (this.touched.size >= MAX_CACHED) this.touched.clear();
      this.touched.set(found.key.id, now);
      void this.users.touchKey(found.key.id, now).catch(() => undefined);
    }
    return { userId: found.user.id, name: found.user.name, role: found.user.role, keyId: found.key.id };
  }

  private fail(sources: string[], message: string, field: string): AppError {
    this.limiter.recordFailure(sources);
    const blocked = this.limiter.blockedFor(sources);
    if (blocked > 0) {
      return new AppError(ErrorCode.AUTH_RATE_LIMITED, 'Too many failed authentications; try again later (a valid key is still accepted)', { retryAfter: blocked, field });
    }
    return new AppError(ErrorCode.UNAUTHENTICATED, message, { field });
  }
}
