import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, redactConfig } from './app-config';

describe('loadConfig', () => {
  it('fills defaults', () => {
    const c = loadConfig({});
    expect(c.values).toMatchObject({ host: '127.0.0.1', port: 8780, gpus: 'auto', open_registration: false, embedded_worker: true });
    expect(c.home).toMatch(/\.opentinker$/);
    expect(c.usesPostgres).toBe(false);
  });

  it('reads OPENTINKER_* variables over the YAML file, and explicit overrides over both', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'port: 9000\ncpu_slots: 3\nopen_registration: true\n');
    const c = loadConfig({ OPENTINKER_CONFIG: file, OPENTINKER_PORT: '9100' }, { cpu_slots: 5 });
    expect(c.values).toMatchObject({ port: 9100, cpu_slots: 5, open_registration: true });
  });

  it.each([
    [{ OPENTINKER_PORT: 'eighty' }, 'port'],
    [{ OPENTINKER_PORT: '70000' }, 'port'],
    [{ OPENTINKER_GPUS: 'all' }, 'gpus'],
    [{ OPENTINKER_DATABASE_URL: 'mysql://x' }, 'database_url'],
    [{ OPENTINKER_ADMIN_KEY: 'secret' }, 'admin_key'],
    [{ OPENTINKER_PROT: '1' }, 'OPENTINKER_PROT'],
    [{ OPENTINKER_REDIS_URL: 'redis://127.0.0.1:6379' }, 'database_url'],
  ])('refuses %j naming %s', (env, field) => {
    expect(() => loadConfig(env)).toThrow(expect.objectContaining({ code: 'OT_ERR_CONFIG_INVALID', field }));
  });

  it('refuses unknown keys in the YAML file by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'port: 9000\nworkerz: 2\n');
    expect(() => loadConfig({ OPENTINKER_CONFIG: file })).toThrow(/workerz/);
    expect(() => loadConfig({ OPENTINKER_CONFIG: join(dir, 'missing.yaml') })).toThrow(/not found/);
  });

  it('never shows secrets when the config is logged', () => {
    const c = loadConfig({
      OPENTINKER_ADMIN_KEY: 'otk_abcdefghijklmnopqrstuvwxyz',
      OPENTINKER_DATABASE_URL: 'postgres://user:hunter2@db:5432/ot',
      OPENTINKER_REDIS_URL: 'redis://:pw@cache:6379',
    });
    const shown = JSON.stringify(redactConfig(c.values));
    expect(shown).not.toContain('hunter2');
    expect(shown).not.toContain('abcdefghijklmnop');
    expect(shown).not.toContain(':pw@');
    expect(shown).toContain('postgres://***@db:5432/ot');
  });
});
