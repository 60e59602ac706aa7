import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, runCli } from '../support/cli-process';
import { unusedPort } from '../support/unused-port';

// `opentinker config` (the real binary, over `dist/`) and the settings every process shares: the
// engine's variables are settings like the others, so `serve` starts with them set.

/** The test process's environment without any OPENTINKER_ variable. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_')) env[k] = v;
  return { ...env, ...extra };
}

describe('opentinker config', () => {
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-cmd-'));
    file = join(dir, 'opentinker.yaml');
    writeFileSync(file, 'port: 9000\ncpu_slots: 3\ndatabase_url: postgres://ot:hunter2@db:5432/ot\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints each effective setting with its source, secrets redacted, as JSON', async () => {
    const env = cleanEnv({
      OPENTINKER_CONFIG: file,
      OPENTINKER_HOME: dir,
      OPENTINKER_CPU_SLOTS: '5',
      OPENTINKER_ENGINE_BACKEND: 'wasm',
      OPENTINKER_ADMIN_KEY: 'otk_abcdefghijklmnopqrstuvwxyz',
      OPENTINKER_API_KEY: 'otk_a_client_key_not_a_setting_0',
    });
    const run = await runCli(['config', '--json', '--port', '9100', '--no-worker'], { env, cwd: dir });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).not.toMatch(/hunter2|abcdefghijklmnop/);
    const out = JSON.parse(run.stdout) as { config_file: string; settings: Array<{ key: string; value: unknown; source: string; from?: string }> };
    expect(out.config_file).toBe(file);
    const byKey = Object.fromEntries(out.settings.map((s) => [s.key, s]));
    expect(byKey.port).toEqual({ key: 'port', value: 9100, source: 'flag' });
    expect(byKey.embedded_worker).toEqual({ key: 'embedded_worker', value: false, source: 'flag' });
    expect(byKey.cpu_slots).toEqual({ key: 'cpu_slots', value: 5, source: 'env', from: 'OPENTINKER_CPU_SLOTS' });
    expect(byKey.database_url).toEqual({ key: 'database_url', value: 'postgres://***@db:5432/ot', source: 'file', from: file });
    expect(byKey.admin_key).toMatchObject({ value: 'otk_***', source: 'env' });
    expect(byKey.engine_backend).toEqual({ key: 'engine_backend', value: 'wasm', source: 'env', from: 'OPENTINKER_ENGINE_BACKEND' });
    expect(byKey.engine_matmul).toEqual({ key: 'engine_matmul', value: 'native', source: 'default' });
    expect(byKey.worker_id).toEqual({ key: 'worker_id', value: null, source: 'default' });
  });

  it('prints a table for people', async () => {
    const run = await runCli(['config'], { env: cleanEnv({ OPENTINKER_HOME: dir, OPENTINKER_ENGINE_THREADS: '2' }), cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Config file: (none');
    expect(run.stdout).toMatch(/^SETTING +VALUE +SOURCE$/m);
    expect(run.stdout).toMatch(/^engine_threads +2 +environment OPENTINKER_ENGINE_THREADS$/m);
    expect(run.stdout).toMatch(/^host +127\.0\.0\.1 +default$/m);
  });

  it('refuses an unknown OPENTINKER_ variable and a bad engine value by name', async () => {
    const unknown = await runCli(['config'], { env: cleanEnv({ OPENTINKER_ENGINE_BLAS_THREADS: '2' }), cwd: dir });
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining('Unknown setting OPENTINKER_ENGINE_BLAS_THREADS') });
    const bad = await runCli(['config'], { env: cleanEnv({ OPENTINKER_ENGINE_DEVICE: 'tpu' }), cwd: dir });
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('engine_device') });
  });

  it('lets `serve` start with an engine variable set, as the engine README documents', async () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const port = await unusedPort();
    const env = cleanEnv({ OPENTINKER_HOME: home, OPENTINKER_ENGINE_BACKEND: 'wasm', OPENTINKER_EMBEDDED_WORKER: 'false', OPENTINKER_LOG_LEVEL: 'error' });
    const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port)], { env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 30_000);
        child.stdout.on('data', () => {
          if (out.includes('OpenTinker listening on')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`serve exited with ${code}:\n${out}`));
        });
      });
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
