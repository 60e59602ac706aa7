import { displayPrefix, generateApiKey, hashApiKey, hashOperatorKey, legacyKeyId, parseApiKey, sameHash, tinkerForm, verifyOperatorKey } from './api-key';
import { addressSource, AuthFailureLimiter } from './auth-failure-limiter';
import { loadConfig } from '../config/app-config';

describe('API keys', () => {
  it('are otk_ + a 12-character id + _ + 256 random bits + a checksum, distinct, and hashed with SHA-256', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key).toMatch(/^otk_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}$/);
    expect(a.key.slice(4, 16)).toBe(a.keyId);
    expect(a.key).not.toBe(b.key);
    expect(a.keyId).not.toBe(b.keyId);
    expect(parseApiKey(a.key)).toEqual({ key: a.key, kind: 'generated', keyId: a.keyId });
    expect(hashApiKey(a.key)).toMatch(/^[0-9a-f]{64}$/);
    expect(sameHash(hashApiKey(a.key), hashApiKey(a.key))).toBe(true);
    expect(sameHash(hashApiKey(a.key), hashApiKey(b.key))).toBe(false);
    expect(displayPrefix(a.keyId)).toBe(a.key.slice(0, 16));
  });

  it('are read the same in the Tinker SDK form (tml- + the key)', () => {
    const { key, keyId } = generateApiKey();
    expect(tinkerForm(key)).toBe(`tml-${key}`);
    expect(tinkerForm(tinkerForm(key))).toBe(`tml-${key}`);
    expect(parseApiKey(`tml-${key}`)).toEqual({ key, kind: 'generated', keyId });
    expect(parseApiKey('tml-otk_operator_chose_this_one_1')).toEqual({ key: 'otk_operator_chose_this_one_1', kind: 'other', keyId: 'operator' });
  });

  it('refuse a generated key with any character changed, by its checksum, without any lookup', () => {
    const { key } = generateApiKey();
    let refused = 0;
    for (let i = 4; i < key.length; i++) {
      if (i === 16) continue;
      const swapped = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
      if (parseApiKey(swapped) === null) refused += 1;
    }
    expect(refused).toBe(key.length - 5);
  });

  it('read keys issued before ids, and operator-chosen ones, by the 8 characters after otk_', () => {
    const legacy = 'otk_' + 'AbC-_12x'.repeat(5) + 'abc';
    expect(legacy).toHaveLength(47);
    expect(parseApiKey(legacy)).toEqual({ key: legacy, kind: 'other', keyId: 'AbC-_12x' });
    expect(legacyKeyId(legacy)).toBe('AbC-_12x');
  });

  it.each([
    '',
    'otk_',
    'otk_short',
    'sk_' + 'a'.repeat(40),
    'otk_' + 'a'.repeat(40) + ' ',
    'otk_' + '€'.repeat(30),
    'tml-',
    'tml-tml-otk_' + 'a'.repeat(30),
    'otk_' + 'a'.repeat(201),
  ])('refuses %j', (k) => {
    expect(parseApiKey(k)).toBeNull();
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
  const t0 = 60_000 * 1000; // the start of a minute

  it('blocks a source after the limit until its minute is over, per source', () => {
    const limiter = new AuthFailureLimiter(loadConfig({}, { auth_failures_per_minute: 2 }));
    limiter.recordFailure(['addr:a', 'key:aaaaaaaa'], t0);
    expect(limiter.blockedFor(['addr:a'], t0)).toBe(0);
    limiter.recordFailure(['addr:a', 'key:bbbbbbbb'], t0 + 1000);
    expect(limiter.blockedFor(['addr:a'], t0 + 1000)).toBe(59);
    expect(limiter.blockedFor(['key:aaaaaaaa'], t0 + 1000)).toBe(0);
    expect(limiter.blockedFor(['addr:b', 'key:aaaaaaaa'], t0 + 1000)).toBe(0);
    limiter.recordFailure(['addr:c', 'key:aaaaaaaa'], t0 + 2000);
    expect(limiter.blockedFor(['addr:d', 'key:aaaaaaaa'], t0 + 2000)).toBe(58);
    expect(limiter.blockedFor(['addr:a'], t0 + 60_000)).toBe(0);
  });

  it('keeps its size and its answers for known sources however many distinct sources fail', () => {
    const limiter = new AuthFailureLimiter(loadConfig({}, { auth_failures_per_minute: 20 }));
    for (let i = 0; i < 200_000; i++) limiter.recordFailure([`key:bogus${i}`], t0);
    expect(AuthFailureLimiter.BYTES).toBe(1024 * 1024);
    // 200,000 single failures spread over 65,536 cells per row: no source reaches 20 in both of its cells.
    expect(limiter.blockedFor(['addr:someone-else', 'key:bogus7'], t0)).toBe(0);
    for (let i = 0; i < 20; i++) limiter.recordFailure(['addr:guesser'], t0);
    expect(limiter.blockedFor(['addr:guesser'], t0)).toBe(60);
  });

  it('counts IPv6 clients by their /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressSource('10.1.2.3')).toBe('addr:10.1.2.3');
    expect(addressSource('::ffff:10.1.2.3')).toBe('addr:10.1.2.3');
    expect(addressSource('2001:db8:1:2:aaaa::1')).toBe('addr:2001:db8:1:2::/64');
    expect(addressSource('2001:0db8:0001:0002:ffff:1:2:3')).toBe('addr:2001:db8:1:2::/64');
    expect(addressSource('2001:db8::1')).toBe('addr:2001:db8:0:0::/64');
    expect(addressSource('::1')).toBe('addr:0:0:0:0::/64');
    expect(addressSource('fe80::1%eth0')).toBe('addr:fe80:0:0:0::/64');
  });
});
