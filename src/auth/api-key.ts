import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const API_KEY_PREFIX = 'otk_';
/**
 * The Tinker SDK refuses keys that do not start with `tml-`, so every key is also accepted as
 * `tml-` + the key: the same key, the same user.
 */
export const TINKER_KEY_PREFIX = 'tml-';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_CHARS = 12;
/** 43 base62 characters carry 256 bits. */
const SECRET_CHARS = 43;
const CHECK_CHARS = 6;

/** Anything the server may have issued or an operator may have chosen: `otk_` and 20–200 URL-safe characters. */
const ANY_KEY = /^otk_[A-Za-z0-9_-]{20,200}$/;
/** A generated key: `otk_<id>_<secret><checksum>`, base62 only. */
const GENERATED = /^otk_([0-9A-Za-z]{12})_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/;

/**
 * A presented key, understood without any lookup or hashing.
 *
 * - `generated`: a key this server issued (`otk_<12-char id>_<43-char secret><6-char CRC-32>`). The id is
 *   not secret; it names the one row to verify, so an unknown id is refused without hashing anything.
 * - `other`: any other `otk_…` text: a key issued before key ids (`otk_` + 43 base64url characters,
 *   found by its first 8 characters after `otk_`, which its stored `prefix` always showed), or one an
 *   operator chose (`admin_key`).
 */
export interface PresentedKey {
  key: string;
  kind: 'generated' | 'other';
  /** What finds the row(s) to verify, and names the key in the failure limiter. */
  keyId: string;
}

/** A new API key and its id. 256 random bits, so a fast hash (SHA-256) is a sound store. */
export function generateApiKey(): { key: string; keyId: string } {
  const keyId = randomBase62(ID_CHARS);
  const body = `${API_KEY_PREFIX}${keyId}_${randomBase62(SECRET_CHARS)}`;
  return { key: body + checksum(body), keyId };
}

/**
 * Reads a key as sent (with or without the Tinker SDK's `tml-`), or null when it cannot be a key:
 * wrong characters or length, or a generated key whose checksum does not match (a typo or a guess).
 */
export function parseApiKey(presented: string): PresentedKey | null {
  const key = presented.startsWith(TINKER_KEY_PREFIX + API_KEY_PREFIX) ? presented.slice(TINKER_KEY_PREFIX.length) : presented;
  if (!ANY_KEY.test(key)) return null;
  const m = GENERATED.exec(key);
  if (m) return checksum(key.slice(0, -CHECK_CHARS)) === m[3] ? { key, kind: 'generated', keyId: m[1] } : null;
  return { key, kind: 'other', keyId: legacyKeyId(key) };
}

/** The id of a key issued before key ids: the 8 characters after `otk_` (what its listing's prefix showed). */
export function legacyKeyId(key: string): string {
  return key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 8);
}

/** The same key in the form the Tinker SDK accepts. */
export function tinkerForm(key: string): string {
  return key.startsWith(TINKER_KEY_PREFIX) ? key : TINKER_KEY_PREFIX + key;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The part of a generated key shown in listings: `otk_` and its id. */
export function displayPrefix(keyId: string): string {
  return API_KEY_PREFIX + keyId;
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 × 62: bytes above it are dropped so every character is equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** CRC-32 of the text in 6 base62 characters, so a mistyped or invented key is refused before any lookup. */
function checksum(text: string): string {
  let n = crc32(text);
  let out = '';
  for (let i = 0; i < CHECK_CHARS; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * Keys an operator chose (`OPENTINKER_ADMIN_KEY`) may be guessable, unlike generated ones, so they are
 * stored with scrypt (N=2^14, r=8, p=1) and a random salt: `s:<16 hex salt>:<base64 of 32 bytes>`, 63
 * characters, in the same column.
 */
export const OPERATOR_HASH_PREFIX = 's:';
const SCRYPT = { N: 1 << 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export function isOperatorHash(stored: string): boolean {
  return stored.startsWith(OPERATOR_HASH_PREFIX);
}

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
