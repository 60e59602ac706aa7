import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from '../support/cli-process';
import { unusedPort } from '../support/unused-port';

// `opentinker serve` prints a generated admin key once, on the first start of a data folder, and never
// prints a key it was given (OPENTINKER_ADMIN_KEY) — not even with debug logging, which dumps the config.

interface Served {
  child: ChildProcess;
  output: () => string;
  url: string;
}

async function serve(home: string, extra: NodeJS.ProcessEnv = {}): Promise<Served> {
  const port = await unusedPort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_')) env[k] = v;
  Object.assign(env, { OPENTINKER_HOME: home, OPENTINKER_PORT: String(port), OPENTINKER_EMBEDDED_WORKER: 'false', OPENTINKER_LOG_LEVEL: 'debug' }, extra);
  const child = spawn(process.execPath, [BIN, 'serve'], { env });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  // With debug logging the config line is the last thing serve prints at start, after any key.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 30_000);
    const check = () => {
      if (/^Config: /m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', () => reject(new Error(`serve exited:\n${out}`)));
  });
  return { child, output: () => out, url: `http://127.0.0.1:${port}` };
}

async function stop(s: Served): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

async function me(url: string, key: string): Promise<number> {
  return (await fetch(`${url}/v1/users/me`, { headers: { authorization: `Bearer ${key}` } })).status;
}

describe('serve and the admin key', () => {
  const dirs: string[] = [];
  const running: Served[] = [];
  const home = () => {
    const d = mkdtempSync(join(tmpdir(), 'serve-key-'));
    dirs.push(d);
    return d;
  };
  afterEach(async () => {
    await Promise.all(running.splice(0).map(stop));
  });
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('prints a generated key once, on the first start of a data folder, and the key works', async () => {
    const dir = home();
    const first = await serve(dir);
    running.push(first);
    const printed = first.output().match(/shown only this once:\s+(otk_\S+)/);
    expect(printed).not.toBeNull();
    const key = printed![1];
    // Printed once, and once more in the Tinker SDK's form (tml- + the key); not in the config dump.
    expect(first.output().split(key).length - 1).toBe(2);
    expect(first.output()).toContain(`(for the Tinker SDK: tml-${key})`);
    expect(await me(first.url, key)).toBe(200);
    await stop(running.pop()!);

    const second = await serve(dir);
    running.push(second);
    expect(second.output()).not.toMatch(/Created the admin user|shown only this once|otk_/);
    expect(await me(second.url, key)).toBe(200);
  });

  it('never prints a key it was given', async () => {
    const key = 'otk_given_by_the_operator_0123456789';
    const s = await serve(home(), { OPENTINKER_ADMIN_KEY: key });
    running.push(s);
    expect(s.output()).not.toContain(key);
    expect(s.output()).not.toMatch(/shown only this once/);
    expect(await me(s.url, key)).toBe(200);
  });
});
