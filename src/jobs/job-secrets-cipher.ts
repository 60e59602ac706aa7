import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { JobSecretEntity } from './job-secret.entity';

/**
 * Job secrets at rest (`job_secrets.value`): AES-256-GCM with a key the operator holds, the setting
 * `secrets_key`, else `<home>/secrets.key` (created 0600 on first start). A stored value is
 * `otsec1:<key id>:<iv>:<tag>:<ciphertext>` (base64url), its job id and spec path bound to it as
 * associated data, so a value copied to another job's row does not open. The key id (a hash of the key,
 * not the key) says which key sealed a value, so a machine holding another key fails with the setting's
 * name rather than a bare authentication error.
 */

const PREFIX = 'otsec1:';
export const SECRETS_KEY_FILE = 'secrets.key';
const HOW_TO_FIX =
  'set secrets_key (OPENTINKER_SECRETS_KEY) to the same key on every API and worker process of the server, or copy secrets.key from the data folder of the first one';

/** The server's key is missing, malformed, or not the one that sealed a stored secret: names the setting. */
export class SecretsKeyError extends Error {}

function parseKey(text: string, from: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : /^[A-Za-z0-9+/]{43}=$/.test(t) ? Buffer.from(t, 'base64') : null;
  if (key === null || key.length !== 32) throw new SecretsKeyError(`${from} is not a 32-byte key (64 hex digits, or 44 characters of base64): ${HOW_TO_FIX}`);
  return key;
}

const b64 = (b: Buffer) => b.toString('base64url');

export class SecretsCipher {
  /** Not secret: the first 16 hex digits of a hash of the key, stored with each value. */
  readonly keyId: string;

  constructor(
    private readonly key: Buffer,
    /** Where the key came from, for messages: the setting or the file. */
    readonly source: string,
  ) {
    this.keyId = createHash('sha256').update('opentinker job secrets key id\0').update(key).digest('hex').slice(0, 16);
  }

  /**
   * A key for another use of the same operator secret (signing download URLs, say): an HMAC of the
   * purpose under this key, so a key for one purpose says nothing about the key or another purpose's.
   */
  derive(purpose: string): Buffer {
    return createHmac('sha256', this.key).update(`opentinker derived key\0${purpose}`).digest();
  }

  static isSealed(value: string): boolean {
    return value.startsWith(PREFIX);
  }

  /** The key id a stored value was sealed with (null for plaintext). */
  static keyIdOf(value: string): string | null {
    return SecretsCipher.isSealed(value) ? value.slice(PREFIX.length).split(':')[0] : null;
  }

  seal(jobId: string, path: string, value: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${jobId}\0${path}`));
    const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.keyId}:${b64(iv)}:${b64(cipher.getAuthTag())}:${b64(data)}`;
  }

  /** The plaintext of a stored value (a value stored before encryption is returned as it is). */
  open(jobId: string, path: string, stored: string): string {
    if (!SecretsCipher.isSealed(stored)) return stored;
    const [keyId, iv, tag, data] = stored.slice(PREFIX.length).split(':');
    if (keyId !== this.keyId) {
      throw new SecretsKeyError(`The job's secrets were encrypted with another key (id ${keyId}) than this machine's (id ${this.keyId}, ${this.source}): ${HOW_TO_FIX}`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv ?? '', 'base64url'));
      decipher.setAAD(Buffer.from(`${jobId}\0${path}`));
      decipher.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data ?? '', 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretsKeyError(`The job's secret ${path} does not decrypt with this machine's key (${this.source}): it was altered or sealed for another row`);
    }
  }
}

const ciphers = new WeakMap<AppConfig, SecretsCipher>();

/**
 * The server's secrets key: the setting, else `<home>/secrets.key`, created (0600, random) when
 * `create` and missing. Throws {@link SecretsKeyError} naming the setting when it is malformed, or
 * missing and not to be created. One object per config.
 */
export function secretsCipher(config: AppConfig, create = true): SecretsCipher {
  const known = ciphers.get(config);
  if (known) return known;
  let cipher: SecretsCipher;
  if (config.values.secrets_key !== undefined) {
    cipher = new SecretsCipher(parseKey(config.values.secrets_key, 'secrets_key'), 'setting secrets_key');
  } else {
    const file = join(config.home, SECRETS_KEY_FILE);
    const source = `$OPENTINKER_HOME/${SECRETS_KEY_FILE}`;
    let text: string | null = null;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new SecretsKeyError(`Cannot read ${source}: ${(error as Error).message}; ${HOW_TO_FIX}`);
    }
    if (text === null) {
      if (!create) throw new SecretsKeyError(`No secrets key on this machine (no setting secrets_key, no ${source}): ${HOW_TO_FIX}`);
      text = randomBytes(32).toString('base64');
      try {
        writeFileSync(file, `${text}\n`, { mode: 0o600, flag: 'wx' });
      } catch (error) {
        // Another process of this data folder made it first: use theirs.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        text = readFileSync(file, 'utf8');
      }
    }
    cipher = new SecretsCipher(parseKey(text, source), source);
  }
  ciphers.set(config, cipher);
  return cipher;
}

/**
 * At start, after the migrations: encrypts the secrets still stored in plain text (written before
 * encryption), and refuses to start when stored secrets were sealed with another key than this
 * machine's, or when there is no key here while the database holds sealed secrets (a worker on another
 * machine; no key file is made for it then).
 */
export async function sealStoredSecrets(dataSource: DataSource, config: AppConfig): Promise<void> {
  const repo = dataSource.getRepository(JobSecretEntity);
  const rows = await repo.find();
  const sealedIds = new Set(rows.map((r) => SecretsCipher.keyIdOf(r.value)).filter((id): id is string => id !== null));
  const cipher = secretsCipher(config, sealedIds.size === 0);
  const foreign = [...sealedIds].filter((id) => id !== cipher.keyId);
  if (foreign.length > 0) {
    throw new SecretsKeyError(
      `The database holds job secrets encrypted with another key (id ${foreign.join(', ')}) than this machine's (id ${cipher.keyId}, ${cipher.source}): ${HOW_TO_FIX}`,
    );
  }
  for (const row of rows) {
    if (SecretsCipher.isSealed(row.value)) continue;
    await repo.update({ jobId: row.jobId, path: row.path, value: row.value }, { value: cipher.seal(row.jobId, row.path, row.value) });
  }
}
