import { displayPrefix, generateApiKey, hashApiKey, looksLikeApiKey, sameHash } from './api-key';
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

describe('AuthFailureLimiter', () => {
  it('blocks an address after the limit until its minute is over, per address', () => {
    const limiter = new AuthFailureLimiter(loadConfig({}, { auth_failures_per_minute: 2 }));
    const t0 = 1_000_000;
    limiter.recordFailure('a', t0);
    expect(limiter.blockedFor('a', t0)).toBe(0);
    limiter.recordFailure('a', t0 + 1000);
    expect(limiter.blockedFor('a', t0 + 1000)).toBe(59);
    expect(limiter.blockedFor('b', t0 + 1000)).toBe(0);
    expect(limiter.blockedFor('a', t0 + 60_000)).toBe(0);
  });
});
