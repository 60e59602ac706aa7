import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/app-config';
import { SecretsCipher, secretsCipher, SecretsKeyError } from './job-secrets-cipher';

describe('job secrets at rest', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'secrets-cipher-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('seals with AES-256-GCM bound to the job and path, under a key file made 0600 on first use', () => {
    const cipher = secretsCipher(loadConfig({}, { home }));
    expect(statSync(join(home, 'secrets.key')).mode & 0o777).toBe(0o600);
    const sealed = cipher.seal('job-1', 'model.hf_token', 'hf_s3cret');
    expect(sealed).toMatch(/^otsec1:[0-9a-f]{16}:[\w-]+:[\w-]+:[\w-]+$/);
    expect(sealed).not.toContain('s3cret');
    expect(cipher.seal('job-1', 'model.hf_token', 'hf_s3cret')).not.toBe(sealed); // a fresh IV each time
    expect(cipher.open('job-1', 'model.hf_token', sealed)).toBe('hf_s3cret');
    // Moved to another row, or altered, it does not open.
    expect(() => cipher.open('job-2', 'model.hf_token', sealed)).toThrow(SecretsKeyError);
    expect(() => cipher.open('job-1', 'environment.token', sealed)).toThrow(/altered or sealed for another row/);
    expect(() => cipher.open('job-1', 'model.hf_token', sealed.slice(0, -2) + 'AA')).toThrow(SecretsKeyError);
    // A value stored before encryption reads as it is (start seals it).
    expect(cipher.open('job-1', 'x', 'plain')).toBe('plain');
    // The same data folder, another process: the same key.
    expect(secretsCipher(loadConfig({}, { home })).open('job-1', 'model.hf_token', sealed)).toBe('hf_s3cret');
  });

  it('takes the key from the setting (hex or base64) and names the setting when another key sealed a value', () => {
    const hex = secretsCipher(loadConfig({}, { home, secrets_key: '11'.repeat(32) }));
    const b64 = secretsCipher(loadConfig({}, { home, secrets_key: Buffer.alloc(32, 0x11).toString('base64') }));
    expect(b64.keyId).toBe(hex.keyId);
    expect(b64.open('j', 'p', hex.seal('j', 'p', 'v'))).toBe('v');
    const other = new SecretsCipher(Buffer.alloc(32, 2), 'test');
    expect(() => other.open('j', 'p', hex.seal('j', 'p', 'v'))).toThrow(/another key .*set secrets_key \(OPENTINKER_SECRETS_KEY\)/);
    expect(() => loadConfig({}, { home, secrets_key: 'short' })).toThrow(/secrets_key/);
  });

  it('derives a key per purpose, the same from the same secret, and neither the secret nor another purpose’s', () => {
    const a = new SecretsCipher(Buffer.alloc(32, 1), 'test');
    const k = a.derive('downloads');
    expect(k).toHaveLength(32);
    expect(new SecretsCipher(Buffer.alloc(32, 1), 'again').derive('downloads').equals(k)).toBe(true);
    expect(a.derive('uploads').equals(k)).toBe(false);
    expect(new SecretsCipher(Buffer.alloc(32, 2), 'test').derive('downloads').equals(k)).toBe(false);
    expect(k.equals(Buffer.alloc(32, 1))).toBe(false);
  });

  it('refuses a key file that holds no 32-byte key, and a missing one where it may not be made', () => {
    expect(() => secretsCipher(loadConfig({}, { home }), false)).toThrow(/No secrets key on this machine/);
    writeFileSync(join(home, 'secrets.key'), 'not a key\n');
    expect(() => secretsCipher(loadConfig({}, { home }))).toThrow(/\$OPENTINKER_HOME\/secrets.key is not a 32-byte key .*secrets_key/);
  });
});
