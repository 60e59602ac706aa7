import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'otk_';
const KEY_PATTERN = /^otk_[A-Za-z0-9_-]{20,200}$/;

/** A new API key: `otk_` + 32 random bytes in base64url (256 bits, so a fast hash is a sound store). */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function looksLikeApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The part of a key shown in listings. */
export function displayPrefix(key: string): string {
  return key.slice(0, 12);
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Keys an operator chose (`OPENTINKER_ADMIN_KEY`) may be guessable, unlike generated ones, so they are
 * stored with scrypt (N=2^14, r=8, p=1) and a random salt: `s:<16 hex salt>:<base64 of 32 bytes>`, 63
 * characters, in the same column. Such keys are few (one per configured key), found by this prefix.
 */
export const OPERATOR_HASH_PREFIX = 's:';
const SCRYPT = { N: 1 << 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

function scryptHex(key: string, salt: string): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(key, salt, 32, SCRYPT, (error, derived) => (error ? reject(error) : resolve(derived))));
}

export async function hashOperatorKey(key: string): Promise<string> {
  const salt = randomBytes(8).toString('hex');
  return `${OPERATOR_HASH_PREFIX}${salt}:${(await scryptHex(key, salt)).toString('base64')}`;
}

export async function verifyOperatorKey(key: string, stored: string): Promise<boolean> {
  const m = /^s:([0-9a-f]{16}):([A-Za-z0-9+/=]{44})$/.exec(stored);
  if (!m) return false;
  const expected = Buffer.from(m[2], 'base64');
  const got = await scryptHex(key, m[1]);
  return got.length === expected.length && timingSafeEqual(got, expected);
}
