import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, redactConfig, redactSetting } from './app-config';

describe('loadConfig', () => {
  it('fills defaults', () => {
    const c = loadConfig({});
    expect(c.values).toMatchObject({ host: '127.0.0.1', port: 8780, gpus: 'auto', open_registration: false, embedded_worker: true });
    expect(c.home).toMatch(/\.opentinker$/);
    expect(c.usesPostgres).toBe(false);
  });

  it('reads OPENTINKER_* variables over the YAML file, and explicit overrides over both, remembering each source', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'port: 9000\ncpu_slots: 3\nopen_registration: true\nengine_matmul: xnnpack\n');
    const c = loadConfig({ OPENTINKER_CONFIG: file, OPENTINKER_PORT: '9100', OPENTINKER_ENGINE_MATMUL: 'stock' }, { cpu_slots: 5 });
    expect(c.values).toMatchObject({ port: 9100, cpu_slots: 5, open_registration: true, engine_matmul: 'stock' });
    expect(c.sources).toMatchObject({
      port: { kind: 'env', name: 'OPENTINKER_PORT' },
      cpu_slots: { kind: 'flag' },
      open_registration: { kind: 'file', file },
      engine_matmul: { kind: 'env', name: 'OPENTINKER_ENGINE_MATMUL' },
      host: { kind: 'default' },
    });
  });

  it("takes the engine's settings like any other, with the engine's defaults and checks", () => {
    expect(loadConfig({}).engine).toEqual({ engine_backend: 'auto', engine_matmul: 'native', engine_device: 'auto' });
    const c = loadConfig({ OPENTINKER_ENGINE_BACKEND: 'wasm', OPENTINKER_ENGINE_THREADS: '3', OPENTINKER_ENGINE_MEMORY_MB: '512', OPENTINKER_ENGINE_DEVICE: 'cpu' });
    expect(c.engine).toEqual({ engine_backend: 'wasm', engine_matmul: 'native', engine_threads: 3, engine_memory_mb: 512, engine_device: 'cpu' });
    expect(() => loadConfig({ OPENTINKER_ENGINE_BACKEND: 'gpu' })).toThrow(
      expect.objectContaining({ code: 'OT_ERR_CONFIG_INVALID', field: 'engine_backend', message: expect.stringContaining('one of auto, tensorflow, wasm, cpu') }),
    );
    expect(() => loadConfig({ OPENTINKER_ENGINE_MEMORY_MB: '32' })).toThrow(expect.objectContaining({ field: 'engine_memory_mb' }));
  });

  it('lets the variables that are not settings pass, and only those', () => {
    const others = { OPENTINKER_API_KEY: 'otk_x', OPENTINKER_URL: 'http://h', OPENTINKER_ENV_TOKEN: 't', OPENTINKER_JOB_ID: 'j' };
    expect(loadConfig(others).values.port).toBe(8780);
    expect(() => loadConfig({ OPENTINKER_ENGINE_BLAS_THREADS: '2' })).toThrow(expect.objectContaining({ field: 'OPENTINKER_ENGINE_BLAS_THREADS' }));
  });

  it('carries the installation layout: the entry files and the default plugins folder under its root', () => {
    const c = loadConfig({}, {}, { root: '/opt/ot' });
    expect(c.install.runnerEntry).toBe('/opt/ot/dist/job-runner.main.js');
    expect(c.install.modelServerEntry).toBe('/opt/ot/dist/serving/model-server.main.js');
    expect(c.pluginsDir).toBe('/opt/ot/plugins');
    expect(loadConfig({ OPENTINKER_PLUGINS_DIR: '/srv/plugins' }, {}, { root: '/opt/ot' }).pluginsDir).toBe('/srv/plugins');
    // By default, the folder this code is installed in (the repository root here).
    expect(loadConfig({}).install.root).toBe(process.cwd());
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
    expect(redactSetting('admin_key', c.values.admin_key)).toBe('otk_***');
    expect(redactSetting('port', 8780)).toBe(8780);
  });
});
