import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { BIN } from '../support/cli-process';
import { unusedPort } from '../support/unused-port';

/**
 * The real `opentinker env serve` binary (it runs `dist/`: `npm run build` first): an environment by
 * id and by package path, its token (flag and OPENTINKER_ENV_TOKEN), the episode cap and idle expiry.
 */

interface Served {
  url: string;
  stdout: string;
  child: ChildProcess;
}

const running: ChildProcess[] = [];

/** Starts `env serve <args>` on a free port and resolves once it says where it serves. */
async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const port = await unusedPort();
  const base = { ...process.env };
  delete base.OPENTINKER_ENV_TOKEN;
  const child = spawn(process.execPath, [BIN, 'env', 'serve', ...args, '--port', String(port)], { env: { ...base, ...env } });
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`env serve did not start in 20 s: ${stdout}${stderr}`)), 20_000);
    child.stdout!.on('data', (d) => {
      stdout += d;
      if (stdout.includes(' served on ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`env serve exited with ${code}: ${stdout}${stderr}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, stdout, child };
}

async function call(url: string, method: string, path: string, { body, token }: { body?: unknown; token?: string } = {}) {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

afterAll(async () => {
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
});

describe('opentinker env serve (the binary)', () => {
  // Both servers start at once: each start is most of this file's time.
  let byId: Promise<Served>;
  let byPath: Promise<Served>;
  beforeAll(() => {
    byId = serve(['gomoku', '--token', 'flag-token', '--max-episodes', '1', '--idle-seconds', '2']);
    byPath = serve([join(process.cwd(), 'test', 'fixtures', 'plugins', 'valid-cjs'), '--config', '{"target":2}'], { OPENTINKER_ENV_TOKEN: 'env-token' });
    // Unobserved rejections would be reported before a test awaits them.
    byId.catch(() => undefined);
    byPath.catch(() => undefined);
  });

  it('serves an installed environment by id, behind the --token bearer token', async () => {
    const { url, stdout } = await byId;
    expect(stdout).toContain(`Environment gomoku@`);
    expect(stdout).toContain('token required');
    expect((await call(url, 'GET', '/health')).status).toBe(200); // health stays open for probes
    const denied = await call(url, 'GET', '/v1/info');
    expect([denied.status, denied.body.code]).toEqual([401, 'ENV_UNAUTHENTICATED']);
    expect((await call(url, 'GET', '/v1/info', { token: 'wrong-token' })).status).toBe(401);
    const info = await call(url, 'GET', '/v1/info', { token: 'flag-token' });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ id: 'gomoku', protocol_version: '1', turn_mode: 'multi' });
  });

  it('refuses episodes past --max-episodes with ENV_CAPACITY, and expires an idle one after --idle-seconds', async () => {
    const { url } = await byId;
    const first = await call(url, 'POST', '/v1/episodes', { body: { seed: 1 }, token: 'flag-token' });
    expect(first.status).toBe(201);
    const second = await call(url, 'POST', '/v1/episodes', { body: { seed: 2 }, token: 'flag-token' });
    expect([second.status, second.body.code]).toEqual([429, 'ENV_CAPACITY']);

    // Left alone, the episode is closed by the sweeper (every second) once idle for two seconds.
    const deadline = Date.now() + 8000;
    let open = 1;
    while (open > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      open = (await call(url, 'GET', '/health')).body.episodes;
    }
    expect(open).toBe(0);
    const late = await call(url, 'POST', `/v1/episodes/${first.body.episode_id}/step`, { body: { action: '<move>4,4</move>' }, token: 'flag-token' });
    expect([late.status, late.body.code]).toEqual([404, 'ENV_EPISODE_CLOSED']);
    expect((await call(url, 'POST', '/v1/episodes', { body: { seed: 3 }, token: 'flag-token' })).status).toBe(201);
  });

  it('serves a package folder given by path, with the token from OPENTINKER_ENV_TOKEN and its --config', async () => {
    const { url, stdout } = await byPath;
    expect(stdout).toContain('Environment counter@1.2.0 served on');
    expect(stdout).toContain('token required');
    expect((await call(url, 'GET', '/v1/info')).status).toBe(401);
    const info = await call(url, 'GET', '/v1/info', { token: 'env-token' });
    expect(info.body).toMatchObject({ id: 'counter', config: { target: 2 } });
    const episode = await call(url, 'POST', '/v1/episodes', { body: { split: 'test', index: 1, seed: 1 }, token: 'env-token' });
    expect(episode.body.messages).toEqual([{ role: 'user', content: 'Count from 1. Say 2.' }]);
    const step = await call(url, 'POST', `/v1/episodes/${episode.body.episode_id}/step`, { body: { action: '2' }, token: 'env-token' });
    // target 2 from --config: saying 2 ends the episode.
    expect(step.body).toMatchObject({ reward: 1, done: true });
  });

  it('refuses an unknown id, naming the known ones', async () => {
    await expect(serve(['no-such-env'])).rejects.toThrow(/Unknown environment no-such-env \(known: .*gomoku/);
  });
});
