import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EnvironmentError } from './errors';
import { crc32, mergeShardStats, OpenTinkerEnvironment, shardUrls } from './opentinker-environment';

/**
 * OpenTinkerEnvironment against real HTTP servers (node:http) answering the way OpenTinker's FastAPI
 * game servers do: shard routing, which calls are retried, timeouts, and what bad answers become.
 */

interface Seen {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
}

type Handler = (req: Seen, res: ServerResponse, n: number) => void;

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A game server as base_game_server.py: reward 1 when the action says "win", else 0 and go on. */
const game: Handler = (req, res) => {
  const p = req.path.split('?')[0];
  if (req.method === 'GET' && p === '/health') return json(res, 200, { status: 'healthy' });
  if (req.method === 'POST' && p === '/reset') return json(res, 200, { observation: `Board for ${String(req.body?.level ?? 'any')}`, system_prompt: 'Play well.' });
  if (req.method === 'POST' && p === '/step') {
    const win = String(req.body?.action).includes('win');
    return json(res, 200, { observation: win ? '' : 'again', reward: win ? 1 : 0, done: win, info: { moves: 1 } });
  }
  if (req.method === 'POST' && p === '/finalize') return json(res, 200, { message: 'removed' });
  if (req.method === 'POST' && p.startsWith('/stats/reset')) return json(res, 200, { step: 1, message: 'Step stats reset' });
  if (req.method === 'GET' && p === '/stats/step') return json(res, 200, { step: 3, total_samples: 2, games_in_step: 2, mean_final_reward: 0.5, win_rate: 0.5, job_id: 'x' });
  json(res, 404, { detail: 'Not Found' });
};

class FakeServer {
  readonly seen: Seen[] = [];
  handler: Handler = game;
  private server: Server | null = null;

  constructor(public port = 0) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  count(method: string, path: string): number {
    return this.seen.filter((s) => s.method === method && s.path === path).length;
  }

  async start(): Promise<this> {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      res.shouldKeepAlive = false;
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        const seen = { method: req.method ?? '', path: req.url ?? '', body: raw ? JSON.parse(raw) : undefined };
        this.seen.push(seen);
        this.handler(seen, res, this.seen.filter((s) => s.method === seen.method && s.path === seen.path).length);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** `n` servers on consecutive ports (a free base found by trying). */
async function shards(n: number): Promise<FakeServer[]> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = await new FakeServer(0).start();
    const started = [first];
    try {
      for (let i = 1; i < n; i++) started.push(await new FakeServer(first.port + i).start());
      servers.push(...started);
      return started;
    } catch {
      await Promise.all(started.map((s) => s.stop()));
    }
  }
  throw new Error('no consecutive free ports');
}

async function failure(call: unknown): Promise<EnvironmentError> {
  try {
    await call;
  } catch (error) {
    return error as EnvironmentError;
  }
  throw new Error('expected the call to fail');
}

const connect = (url: string, extra: Partial<Parameters<typeof OpenTinkerEnvironment.connect>[0]> = {}) =>
  OpenTinkerEnvironment.connect({ url, jobId: 'job-1', retries: 3, backoffMs: 5, timeoutMs: 2000, ...extra });

describe('crc32 and shard URLs', () => {
  it("matches Python's zlib.crc32 of the UTF-8 bytes (upstream's routing hash)", () => {
    expect(crc32('hello')).toBe(907060870);
    expect(crc32('')).toBe(0);
    // Values from Python: zlib.crc32(s.encode('utf-8')).
    expect(crc32('ünïcode')).toBe(248075434);
    expect(crc32('123e4567-e89b-12d3-a456-426614174000')).toBe(3121068470);
  });

  it('counts ports up from the URL, rewrites 0.0.0.0 like upstream, and refuses what cannot be sharded', () => {
    expect(shardUrls('http://game:8081/', 3)).toEqual(['http://game:8081', 'http://game:8082', 'http://game:8083']);
    expect(shardUrls('http://0.0.0.0:9000', 1)).toEqual(['http://127.0.0.1:9000']);
    expect(() => shardUrls('http://game', 2)).toThrow(/needs a port/);
    expect(() => shardUrls('http://game:65535', 2)).toThrow(/past port 65535/);
    expect(() => shardUrls('http://game:80', 0)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_CONFIG', field: 'shards' }));
  });
});

describe('OpenTinkerEnvironment against FastAPI-shaped servers', () => {
  it('routes every call of an episode to the shard crc32(instance_id) picks, and spreads episodes over shards', async () => {
    const [a, b] = await shards(2);
    const env = await connect(a.url, { shards: 2, envKwargs: { level: 1, mode: 'easy' } });
    for (let i = 0; i < 12; i++) {
      const episode = env.newEpisode();
      const messages = await episode.reset({ level: i }, 0);
      expect(messages).toEqual([
        { role: 'system', content: 'Play well.' },
        { role: 'user', content: `Board for ${i}` },
      ]);
      expect(await episode.step('I win')).toEqual({ observation: '', reward: 1, done: true, info: { moves: 1 } });
      await episode.close();
    }
    const calls = [...a.seen.map((s) => ({ ...s, shard: 0 })), ...b.seen.map((s) => ({ ...s, shard: 1 }))].filter((s) => s.body?.instance_id);
    const ids = new Set(calls.map((c) => String(c.body!.instance_id)));
    expect(ids.size).toBe(12);
    for (const id of ids) {
      const mine = calls.filter((c) => c.body!.instance_id === id);
      expect(mine.map((c) => c.path)).toEqual(['/reset', '/step', '/finalize']);
      expect(new Set(mine.map((c) => c.shard))).toEqual(new Set([crc32(id) % 2]));
      expect(mine.every((c) => c.body!.job_id === 'job-1')).toBe(true);
    }
    expect(a.count('POST', '/reset')).toBeGreaterThan(0);
    expect(b.count('POST', '/reset')).toBeGreaterThan(0);
    // The task's kwargs over the job's; the protocol's own keys over both.
    const reset = calls.find((c) => c.path === '/reset')!.body!;
    expect(reset).toMatchObject({ mode: 'easy', job_id: 'job-1' });
    expect(typeof reset.level).toBe('number');
    expect(calls.find((c) => c.path === '/step')!.body).toEqual({ instance_id: expect.any(String), job_id: 'job-1', action: 'I win' });
  });

  it('checks /health of every shard and clears the job statistics there on connect', async () => {
    const [a, b] = await shards(2);
    b.handler = (req, res) => (req.path === '/health' ? json(res, 200, { ok: true }) : game(req, res, 1));
    const err = await failure(connect(a.url, { shards: 2 }));
    expect(err.code).toBe('ENV_UNAVAILABLE');
    expect(err.message).toContain(`${b.url}/health`);
    b.handler = game;
    await connect(a.url, { shards: 2 });
    expect(a.count('POST', '/stats/reset_all?job_id=job-1')).toBe(1);
    expect(b.count('POST', '/stats/reset_all?job_id=job-1')).toBe(1);
  });

  it('retries a reset that failed with a 5xx (a reset of an instance id is idempotent), never a step', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url);
    s.handler = (req, res, n) => (req.path === '/reset' && n === 1 ? (res.writeHead(500, { 'content-type': 'text/plain' }), res.end('Internal Server Error')) : game(req, res, n));
    const episode = env.newEpisode();
    await episode.reset({}, 0);
    expect(s.count('POST', '/reset')).toBe(2);
    const [first, second] = s.seen.filter((x) => x.path === '/reset');
    expect(second.body!.instance_id).toBe(first.body!.instance_id);

    s.handler = (req, res, n) => (req.path === '/step' ? (res.writeHead(500, { 'content-type': 'text/plain' }), res.end('Internal Server Error')) : game(req, res, n));
    const err = await failure(episode.step('move'));
    expect(err.code).toBe('ENV_INTERNAL');
    expect(err.message).toMatch(/game failed on POST \/step \(HTTP 500\)/);
    expect(s.count('POST', '/step')).toBe(1);
  });

  it('times out a step that gets no answer with ENV_TIMEOUT, sent once', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url, { timeoutMs: 300 });
    s.handler = (req, res, n) => (req.path === '/step' ? undefined : game(req, res, n));
    const episode = env.newEpisode();
    await episode.reset({}, 0);
    const t0 = Date.now();
    const err = await failure(episode.step('move'));
    expect(err.code).toBe('ENV_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(s.count('POST', '/step')).toBe(1);
  });

  it('fails a step whose server dies mid-call with ENV_UNAVAILABLE, not sent twice, and later calls name the URL', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url);
    const episode = env.newEpisode();
    await episode.reset({}, 0);
    s.handler = (req, res) => res.socket?.destroy();
    const err = await failure(episode.step('move'));
    expect(err.code).toBe('ENV_UNAVAILABLE');
    expect(err.message).toMatch(/not retried/);
    expect(s.count('POST', '/step')).toBe(1);
    await s.stop();
    const gone = await failure(env.newEpisode().reset({}, 0));
    expect(gone.code).toBe('ENV_UNAVAILABLE');
    expect(gone.message).toContain(s.url);
  });

  it('turns bad answers into stable codes', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url);
    const episode = env.newEpisode();
    await episode.reset({}, 0);

    s.handler = (req, res) => json(res, 404, { detail: `Instance ${String(req.body?.instance_id)} not found. Call /reset first.` });
    expect(await failure(episode.step('x'))).toMatchObject({ code: 'ENV_EPISODE_CLOSED' });

    s.handler = (_req, res) => json(res, 422, { detail: [{ loc: ['body', 'action'], msg: 'str type expected', type: 'type_error.str' }] });
    expect(await failure(episode.step('x'))).toMatchObject({ code: 'ENV_BAD_REQUEST', field: 'action' });

    s.handler = (_req, res) => json(res, 200, { observation: 'x', reward: 'lots', done: false, info: {} });
    expect(await failure(episode.step('x'))).toMatchObject({
      code: 'ENV_UNAVAILABLE',
      field: 'reward',
      message: expect.stringMatching(/\/step: the answer does not fit the protocol \(reward: /),
    });

    s.handler = (_req, res) => json(res, 200, { observation: 'x', reward: 1, done: 'yes', info: {} });
    expect(await failure(episode.step('x'))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'done' });

    s.handler = (_req, res) => json(res, 200, { observation: 'x', reward: 1, done: true, info: [1] });
    expect(await failure(episode.step('x'))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'info' });

    // What upstream's servers may leave out: an empty observation and info.
    s.handler = (_req, res) => json(res, 200, { reward: 1, done: true });
    expect(await episode.step('x')).toEqual({ observation: '', reward: 1, done: true, info: {} });

    s.handler = (_req, res) => json(res, 200, { board: [] });
    expect(await failure(env.newEpisode().reset({}, 0))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'observation' });

    s.handler = (_req, res) => json(res, 200, { observation: 'x', system_prompt: 3 });
    expect(await failure(env.newEpisode().reset({}, 0))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'system_prompt' });

    expect(await failure(env.newEpisode().reset([1, 2] as never, 0))).toMatchObject({ code: 'ENV_INVALID_TASK' });
    expect(await failure(env.newEpisode().step('x'))).toMatchObject({ code: 'ENV_NOT_RESET' });
  });

  it('never fails an episode on a finalize that fails', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url);
    const episode = env.newEpisode();
    await episode.reset({}, 0);
    s.handler = (req, res, n) => (req.path === '/finalize' ? json(res, 500, { detail: 'boom' }) : game(req, res, n));
    await expect(episode.close()).resolves.toBeUndefined();
    await episode.close();
    expect(s.count('POST', '/finalize')).toBeGreaterThanOrEqual(1);
  });

  it("starts from the task's data-row prompt, kept here as OpenTinker's clients keep it, whatever the reset's observation", async () => {
    const [s] = await shards(1);
    // OpenTinker's MathGame answers this placeholder: its clients never show it.
    s.handler = (req, res) => {
      if (req.path.split('?')[0] === '/reset') return json(res, 200, { observation: 'Please solve the following problem:', system_prompt: 'Answer in \\boxed{}.' });
      game(req, res, 0);
    };
    const env = await connect(s.url);
    const prompt = [{ role: 'user', content: 'What is 2+3?' }];
    expect(await env.newEpisode().reset({ prompt, ground_truth: '5', data_source: 'math' }, 0)).toEqual([{ role: 'system', content: 'Answer in \\boxed{}.' }, ...prompt]);
    // Only the env kwargs go to /reset, as StaticDatasetGenerator's env_kwargs.
    expect(s.seen.find((c) => c.path === '/reset')!.body).toEqual({ instance_id: expect.any(String), job_id: 'job-1', ground_truth: '5', data_source: 'math' });
    // A prompt with its own system message keeps it; a text is one user message; anything else is refused before any call.
    const own = [{ role: 'system', content: 'Mine.' }, ...prompt];
    expect(await env.newEpisode().reset({ prompt: own }, 0)).toEqual(own);
    expect(await env.newEpisode().reset({ prompt: 'Hi' }, 0)).toEqual([
      { role: 'system', content: 'Answer in \\boxed{}.' },
      { role: 'user', content: 'Hi' },
    ]);
    const resets = s.count('POST', '/reset');
    for (const bad of [[{ role: 'wizard', content: 'x' }], [], 3]) {
      expect(await failure(env.newEpisode().reset({ prompt: bad }, 0))).toMatchObject({ code: 'ENV_INVALID_TASK', field: 'task.prompt' });
    }
    expect(s.count('POST', '/reset')).toBe(resets);
    // Without a prompt the game's own first message is the prompt.
    s.handler = game;
    expect(await env.newEpisode().reset({ level: 2 }, 0)).toEqual([
      { role: 'system', content: 'Play well.' },
      { role: 'user', content: 'Board for 2' },
    ]);
  });

  it('serves the given tasks per split, else endless {} tasks', async () => {
    const [s] = await shards(1);
    const env = await connect(s.url, { tasks: { test: [{ level: 1 }, { level: 2 }] } });
    expect(env.tasks.size('train')).toBeNull();
    expect(env.tasks.size('test')).toBe(2);
    expect(await env.tasks.get('train', 41)).toEqual({});
    expect(await env.tasks.get('test', 1)).toEqual({ level: 2 });
    expect(() => env.tasks.get('test', 2)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
  });

  it("resets and reads the job's batch statistics on every shard, merged", async () => {
    const [a, b] = await shards(2);
    b.handler = (req, res, n) =>
      req.path.startsWith('/stats/step') ? json(res, 200, { step: 9, total_samples: 6, games_in_step: 6, mean_final_reward: 1, win_rate: 1, job_id: 'x' }) : game(req, res, n);
    const env = await connect(a.url, { shards: 2 });
    await env.batchStats.begin();
    expect(a.count('POST', '/stats/reset?job_id=job-1')).toBe(1);
    expect(b.count('POST', '/stats/reset?job_id=job-1')).toBe(1);
    const stats = await env.batchStats.read();
    // Counts add up; means weigh each shard by the games it finished (2 and 6).
    expect(stats).toEqual({ total_samples: 8, games_in_step: 8, completion_rate: 1, mean_final_reward: (0.5 * 2 + 6) / 8, win_rate: (0.5 * 2 + 6) / 8 });
    await b.stop();
    expect(await env.batchStats.read()).toEqual({ total_samples: 2, games_in_step: 2, completion_rate: 1, mean_final_reward: 0.5, win_rate: 0.5 });
  });
});

describe('mergeShardStats', () => {
  it('keeps a mean when no shard finished a game', () => {
    expect(
      mergeShardStats([
        { games_in_step: 0, total_samples: 3, mean_reward: 0 },
        { games_in_step: 0, total_samples: 1, mean_reward: 0 },
      ]),
    ).toEqual({
      games_in_step: 0,
      total_samples: 4,
      completion_rate: 0,
      mean_reward: 0,
    });
  });
});
