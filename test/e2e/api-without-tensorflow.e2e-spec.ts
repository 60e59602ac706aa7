import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// The API process (with its embedded worker) describes models and checks job specs but never runs a
// model: it must not load TensorFlow.js (its wasm, its memory, its start-up time). Only job runners and
// model servers, child processes, do. Booted from `dist/` as `serve` does, in a process of its own.
const BOOT = `
const { join } = require('node:path');
const { loadConfig } = require(join(process.cwd(), 'dist/config/app-config.js'));
const { createApi } = require(join(process.cwd(), 'dist/app.js'));
const config = loadConfig({}, { home: process.argv[1], embedded_worker: true, gpus: 'none', log_level: 'error' });
createApi({ config, worker: true, logger: false }).then(async (app) => {
  await app.getHttpAdapter().getInstance().ready();
  const tf = Object.keys(require.cache).filter((f) => f.includes('@tensorflow'));
  process.stdout.write(JSON.stringify({ modules: Object.keys(require.cache).length, tf, engine: globalThis._tfengine !== undefined }));
  await app.close();
});
`;

describe('the API process', () => {
  let home: string;
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'api-no-tf-'));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('boots without loading TensorFlow.js', async () => {
    const { stdout } = await run(process.execPath, ['-e', BOOT, home], { cwd: process.cwd(), timeout: 60_000 });
    const seen = JSON.parse(stdout) as { modules: number; tf: string[]; engine: boolean };
    // The check can fail: the app graph is hundreds of modules, and @opentinker/engine's main entry would add tfjs-core.
    expect(seen.modules).toBeGreaterThan(100);
    expect(seen.tf).toEqual([]);
    expect(seen.engine).toBe(false);
  });
});
