import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

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
