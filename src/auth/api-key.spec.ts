import { displayPrefix, generateApiKey, hashApiKey, hashOperatorKey, looksLikeApiKey, sameHash, verifyOperatorKey } from './api-key';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { loadConfig } from '../config/app-config';

describe('API keys', () => {
  it('are otk_ plus 256 random bits, distinct, and hashed with SHA-256', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^otk_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(looksLikeApiKey(a)).toBe(true);
    expect(hashApiKey(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(a)).not.toBe(hashApiKey(b));
    expect(sameHash(hashApiKey(a), hashApiKey(a))).toBe(true);
    expect(sameHash(hashApiKey(a), hashApiKey(b))).toBe(false);
    expect(displayPrefix(a)).toHaveLength(12);
  });

  it.each(['', 'otk_', 'otk_short', 'sk_' + 'a'.repeat(40), 'otk_' + 'a'.repeat(40) + ' ', 'otk_' + '€'.repeat(30)])('rejects %j', (k) => {
    expect(looksLikeApiKey(k)).toBe(false);
  });
});

describe('operator-chosen keys', () => {
  it('are stored with salted scrypt in the hash column, and verify only with the same key', async () => {
    const key = 'otk_operator_chose_this_one_1';
    const a = await hashOperatorKey(key);
    const b = await hashOperatorKey(key);
    expect(a).toMatch(/^s:[0-9a-f]{16}:[A-Za-z0-9+/=]{44}$/);
    expect(a.length).toBeLessThanOrEqual(64);
    expect(a).not.toBe(b);
    expect(await verifyOperatorKey(key, a)).toBe(true);
    expect(await verifyOperatorKey(key + 'x', a)).toBe(false);
    expect(await verifyOperatorKey(key, hashApiKey(key))).toBe(false);
  });
});

describe('AuthFailureLimiter', () => {
  it('blocks a source after the limit until its minute is over, per source', () => {
    const limiter = new AuthFailureLimiter(loadConfig({}, { auth_failures_per_minute: 2 }));
    const t0 = 1_000_000;
    limiter.recordFailure(['addr:a', 'key:otk_aaaaaaaa'], t0);
    expect(limiter.blockedFor(['addr:a'], t0)).toBe(0);
    limiter.recordFailure(['addr:a', 'key:otk_bbbbbbbb'], t0 + 1000);
    expect(limiter.blockedFor(['addr:a'], t0 + 1000)).toBe(59);
    expect(limiter.blockedFor(['key:otk_aaaaaaaa'], t0 + 1000)).toBe(0);
    expect(limiter.blockedFor(['addr:b', 'key:otk_aaaaaaaa'], t0 + 1000)).toBe(0);
    limiter.recordFailure(['addr:c', 'key:otk_aaaaaaaa'], t0 + 2000);
    expect(limiter.blockedFor(['addr:d', 'key:otk_aaaaaaaa'], t0 + 2000)).toBe(58);
    expect(limiter.blockedFor(['addr:a'], t0 + 60_000)).toBe(0);
  });
});
