import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN } from '../support/cli-process';
import { startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';

/**
 * OpenTinker's game-server protocol both ways, against Python written the way OpenTinker writes it
 * (FastAPI + uvicorn from Debian's python3-fastapi and python3-uvicorn, run with /usr/bin/python3):
 * a train job drives a 2-shard guess-a-number server and records its rewards and game statistics; a
 * server that dies mid-episode fails the job with the environment's error instead of hanging; and
 * OpenTinker's client calls get the protocol's answers from `opentinker env serve math --protocol
 * opentinker --shards 2`.
 */
const PYTHON = '/usr/bin/python3';
const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'opentinker');
const SLOW = 90_000;
const FINAL = ['succeeded', 'failed', 'cancelled'];

const children: ChildProcess[] = [];

/** A base port whose next `n - 1` ports are free too (shards listen on consecutive ports). */
async function consecutivePorts(n: number): Promise<number> {
  const listen = (port: number) =>
    new Promise<ReturnType<typeof createServer> | null>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(null));
      s.listen(port, '127.0.0.1', () => resolve(s));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await listen(0);
    const base = (first!.address() as AddressInfo).port;
    const held = [first!];
    for (let i = 1; i < n; i++) {
      const s = base + i <= 65535 ? await listen(base + i) : null;
      if (!s) break;
      held.push(s);
    }
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
    if (held.length === n) return base;
  }
  throw new Error(`no ${n} consecutive free ports`);
}

/** Starts a process in its own group (so its shards stop with it) and keeps it for the cleanup. */
function start(command: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(command, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, output: () => out };
}

function stop(child: ChildProcess): void {
  try {
    if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`);
    return res.ok && ((await res.json()) as { status?: string }).status === 'healthy';
  } catch {
    return false;
  }
}

/** The guess-a-number game server on `shards` ports from a free base; resolves when every shard answers. */
async function gameServer(shards: number, extra: string[] = []): Promise<{ base: number; child: ChildProcess }> {
  const base = await consecutivePorts(shards);
  const { child, output } = start(PYTHON, [join(FIXTURES, 'guess_number_server.py'), '--port', String(base), '--shards', String(shards), ...extra]);
  const urls = Array.from({ length: shards }, (_, i) => `http://127.0.0.1:${base + i}`);
  await waitFor(async () => (await Promise.all(urls.map(healthy))).every(Boolean), 20_000, 100).catch(() => {
    throw new Error(`the game server did not start: ${output()}`);
  });
  return { base, child };
}

afterAll(() => {
  for (const child of children) stop(child);
});

describe("OpenTinker's game-server protocol", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  }, SLOW);
  afterAll(async () => {
    await t?.close();
  });

  /** A train job small enough for seconds on a CPU against the game at `base`. */
  const trainSpec = (base: number, shards: number, totalSteps: number) => ({
    kind: 'train',
    environment: { url: `http://127.0.0.1:${base}`, protocol: 'opentinker', shards, config: { max_number: 3, max_guesses: 2 } },
    model: { preset: 'tiny-char', chat_template: 'plain', context_length: 512 },
    algorithm: { rollout_n: 2 },
    rollout: { max_new_tokens: 3, max_turns: 2, env_timeout_seconds: 10 },
    optim: { lr: 1e-3 },
    batch_size: 2,
    total_steps: totalSteps,
    val_batch_size: 2,
  });
  const series = async (id: string, name: string) =>
    (await t.request('GET', `/v1/jobs/${id}/metrics?name=${encodeURIComponent(name)}`)).body as Array<{ step: number; value: number }>;

  it(
    "trains against a 2-shard Python game server: rewards and the server's game statistics recorded, episodes on both shards",
    async () => {
      const { base } = await gameServer(2);
      const res = await t.request('POST', '/v1/jobs', { body: trainSpec(base, 2, 2) });
      expect(res.status).toBe(201);
      const id = res.body.id as string;
      const done = await waitForState(t, id, FINAL, 60_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');

      const rewards = await series(id, 'reward/mean');
      expect(rewards.map((p) => p.step)).toEqual([1, 2]);
      for (const p of rewards) expect(Number.isFinite(p.value)).toBe(true);
      // The server's /stats/step, read after each batch (upstream's game/ and val_game/ prefixes).
      const started = await series(id, 'game/total_samples');
      expect(started).toEqual([expect.objectContaining({ step: 1, value: 4 }), expect.objectContaining({ step: 2, value: 4 })]); // 2 tasks x 2 samples
      // A game ends at its 2nd guess; one whose turn sampled no token never stepped.
      for (const p of await series(id, 'game/games_in_step')) expect(p.value).toBeGreaterThanOrEqual(1);
      expect((await series(id, 'game/win_rate')).length).toBe(2);
      expect((await series(id, 'val_game/total_samples')).map((p) => p.value)).toEqual([2, 2]);

      // Every shard played some of the job's games (stats are per job_id: the job's id).
      for (const port of [base, base + 1]) {
        const stats = (await (await fetch(`http://127.0.0.1:${port}/stats?job_id=${id}`)).json()) as { total_games: number };
        expect(stats.total_games).toBeGreaterThan(0);
      }
      const logs = (await t.request('GET', `/v1/jobs/${id}/logs`)).text;
      expect(logs).toMatch(/OpenTinker game-server protocol/);
      expect(logs).toMatch(/2 shards/);
    },
    SLOW,
  );

  it(
    "fails the job with the environment's error, not a hang, when the server dies mid-episode",
    async () => {
      const { base, child } = await gameServer(1, ['--die-after-steps', '3']);
      const res = await t.request('POST', '/v1/jobs', { body: trainSpec(base, 1, 3) });
      expect(res.status).toBe(201);
      const t0 = Date.now();
      const done = await waitForState(t, res.body.id, FINAL, 45_000);
      expect(done.state).toBe('failed');
      expect(Date.now() - t0).toBeLessThan(45_000);
      expect(String(done.error)).toMatch(/failed every episode/);
      expect(String(done.error)).toMatch(/Lost the connection to environment server|is unreachable/);
      expect(child.exitCode ?? (await new Promise((r) => child.once('exit', r)))).not.toBe(0);
    },
    SLOW,
  );

  it('refuses a sharded URL without a port at submission, naming the field', async () => {
    const res = await t.request('POST', '/v1/jobs', { body: { ...trainSpec(80, 2, 1), environment: { url: 'http://127.0.0.1/', protocol: 'opentinker', shards: 2 } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ field: 'environment.url' });
    expect(res.body.message).toMatch(/needs a port/);
  });
});

describe('opentinker env serve --protocol opentinker, called like OpenTinker does', () => {
  it(
    'answers reset/step/finalize/stats from a Python client routing by crc32 over 2 shards',
    async () => {
      const base = await consecutivePorts(2);
      const served = start(process.execPath, [BIN, 'env', 'serve', 'math', '--protocol', 'opentinker', '--port', String(base), '--shards', '2']);
      await waitFor(async () => served.output().includes(' served on '), 20_000, 100).catch(() => {
        throw new Error(`env serve did not start: ${served.output()}`);
      });
      expect(served.output()).toContain(`served on http://127.0.0.1:${base}-${base + 1} (OpenTinker's game-server protocol)`);

      const episodes = [
        // No kwargs: the next task of the environment's train split.
        { env_kwargs: {}, actions: ['\\boxed{-1}'] },
        // A task given as OpenTinker's clients send a dataset row's (StaticDatasetGenerator: no prompt).
        { env_kwargs: { ground_truth: '5', extra_info: { question: 'What is 2+3?' }, data_source: 'math' }, actions: ['The answer is \\boxed{5}'] },
        { env_kwargs: { prompt: [{ role: 'user', content: 'What is 2+2?' }], ground_truth: '4' }, actions: ['\\boxed{5}'] },
      ];
      const { stdout } = await promisify(execFile)(PYTHON, [join(FIXTURES, 'opentinker_client_calls.py'), `http://127.0.0.1:${base}`, '2', JSON.stringify(episodes)], {
        timeout: 30_000,
      });
      const out = JSON.parse(stdout);

      expect(out.health).toEqual([
        { status: 200, body: { status: 'healthy' } },
        { status: 200, body: { status: 'healthy' } },
      ]);
      expect(out.reset_all.status).toBe(200);
      expect(out.reset_step).toMatchObject({ status: 200, body: { step: 1, message: 'Step stats reset', job_id: 'python-client-job' } });

      const [generated, right, wrong] = out.episodes;
      expect(generated.reset).toMatchObject({ status: 200, body: { observation: expect.stringContaining('\\boxed{}'), system_prompt: null } });
      expect(generated.steps[0]).toMatchObject({ status: 200, body: { reward: 0, done: true, info: { correct: false } } });
      expect(right.reset).toMatchObject({ status: 200, body: { observation: 'Please solve the following problem:\n\nWhat is 2+3?', game_state: { task: { ground_truth: '5' } } } });
      expect(right.steps).toEqual([{ status: 200, body: { observation: '', reward: 1, done: true, info: expect.objectContaining({ correct: true }) } }]);
      expect(wrong.steps[0]).toMatchObject({ status: 200, body: { reward: 0, done: true } });
      // A finished game was deleted by its last step, as upstream's server does.
      for (const e of out.episodes) expect(e.finalize).toEqual({ status: 200, body: { message: `Instance ${e.instance_id} not found`, status: 'ignored' } });
      // Instances were routed to both ports or one, as crc32 picked: every call of one instance to one port.
      expect(new Set(out.episodes.map((e: { endpoint: string }) => e.endpoint)).size).toBeGreaterThanOrEqual(1);

      expect(out.unknown_step).toMatchObject({ status: 404, body: { detail: 'Instance never-reset not found. Call /reset first.' } });
      // The shards share one state: either shard reports the job's whole batch.
      for (const s of out.step_stats) {
        expect(s.body).toMatchObject({
          step: 1,
          total_samples: 3,
          games_in_step: 3,
          incomplete_samples: 0,
          completion_rate: 1,
          total_interactions: 3,
          job_id: 'python-client-job',
        });
        expect(s.body.mean_final_reward).toBeCloseTo(1 / 3);
      }
      expect(out.all_stats.body).toMatchObject({ total_games: 3, games_in_step: 3 });
    },
    SLOW,
  );
});
