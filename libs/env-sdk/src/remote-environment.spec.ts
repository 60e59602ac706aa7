import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EnvironmentError } from './errors';
import { parseResetAnswer, parseStepAnswer, PROTOCOL_VERSION } from './protocol';
import { RemoteEnvironment } from './remote-environment';

/**
 * RemoteEnvironment against a real HTTP server (node:http, no mocks of fetch): which failures are
 * retried, and that a step is never applied twice.
 */

interface Seen {
  method: string;
  path: string;
  body: unknown;
}

/** Decides the answer to one request; `res.socket.destroy()` simulates a server dying mid-call. */
type Handler = (req: Seen, res: ServerResponse, n: number) => void;

const INFO = {
  id: 'fake',
  version: '1.0.0',
  protocol_version: PROTOCOL_VERSION,
  description: 'a protocol server written by hand',
  turn_mode: 'multi',
  task_source: 'generator',
  config_schema: {},
  config: {},
  tasks: { train: null, test: 3 },
};

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Answers like a healthy server: info, tasks, episodes, steps (counting the reward up by one per step). */
const healthy: Handler = (req, res) => {
  if (req.method === 'GET' && req.path === '/v1/info') return json(res, 200, INFO);
  if (req.method === 'GET' && req.path.startsWith('/v1/tasks')) return json(res, 200, { split: 'test', offset: 0, total: 3, tasks: [{ n: 0 }, { n: 1 }, { n: 2 }] });
  if (req.method === 'POST' && req.path === '/v1/episodes') return json(res, 201, { episode_id: 'e1', messages: [{ role: 'user', content: 'go' }], task: { n: 0 } });
  if (req.method === 'POST' && req.path === '/v1/episodes/e1/step') return json(res, 200, { observation: 'ok', observation_role: 'user', reward: 1, done: false, info: {} });
  if (req.method === 'DELETE') {
    res.writeHead(204);
    return res.end();
  }
  json(res, 404, { statusCode: 404, code: 'ENV_NO_ROUTE', message: 'no route' });
};

class FakeServer {
  readonly seen: Seen[] = [];
  handler: Handler = healthy;
  private server: Server | null = null;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  count(method: string, path: string): number {
    return this.seen.filter((s) => s.method === method && s.path === path).length;
  }

  /** Listens on `port` (0: any free port, remembered for a restart on the same one). */
  async start(port = this.port): Promise<this> {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      // One connection per call, so "the server is down" always means a refused connection. With
      // keep-alive a call could race the client noticing that its pooled socket was closed; it then
      // fails as a lost connection, which a step never retries either (the safe side).
      res.shouldKeepAlive = false;
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        const seen = { method: req.method ?? '', path: req.url ?? '', body: raw ? JSON.parse(raw) : undefined };
        this.seen.push(seen);
        this.handler(seen, res, this.seen.filter((s) => s.method === seen.method && s.path === seen.path).length);
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Goes away like a crashed process: the port refuses connections and open ones are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A port nothing listens on (taken from the OS, then released). */
async function freePort(): Promise<number> {
  const probe = await new FakeServer().start(0);
  const port = probe.port;
  await probe.stop();
  return port;
}

const servers: FakeServer[] = [];
const fake = async () => {
  const s = await new FakeServer().start(0);
  servers.push(s);
  return s;
};
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** The error a call rejects with (a call that succeeds fails the test). */
async function failure(call: unknown): Promise<EnvironmentError> {
  try {
    await call;
  } catch (error) {
    return error as EnvironmentError;
  }
  throw new Error('expected the call to fail');
}

/** The global fetch, recording when each attempt left. */
function timedFetch(onCall?: (n: number) => Promise<void> | void): { fetch: typeof fetch; times: number[] } {
  const times: number[] = [];
  return {
    times,
    fetch: (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      times.push(Date.now());
      await onCall?.(times.length);
      return fetch(input, init);
    }) as typeof fetch,
  };
}

describe('RemoteEnvironment against a real HTTP server', () => {
  it('retries a refused connection with growing backoff, then succeeds', async () => {
    const server = new FakeServer();
    servers.push(server);
    server.port = await freePort();
    // The server comes up just before the third attempt: the first two are refused.
    const probe = timedFetch(async (n) => {
      if (n === 3) await server.start();
    });
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 5, backoffMs: 60, fetch: probe.fetch });
    expect(env.info.id).toBe('fake');
    expect(probe.times).toHaveLength(3);
    expect(probe.times[1] - probe.times[0]).toBeGreaterThanOrEqual(55);
    expect(probe.times[2] - probe.times[1]).toBeGreaterThanOrEqual(115); // doubled
    expect(server.count('GET', '/v1/info')).toBe(1);
  });

  it('fails with ENV_UNAVAILABLE naming the URL when nothing ever listens', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const probe = timedFetch();
    const error = await failure(RemoteEnvironment.connect({ url, retries: 3, backoffMs: 20, fetch: probe.fetch }));
    expect(error).toBeInstanceOf(EnvironmentError);
    expect(error.code).toBe('ENV_UNAVAILABLE');
    expect(error.message).toContain(`Environment server ${url} is unreachable after 3 attempts`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(probe.times).toHaveLength(3);
  });

  it('resends a step that was refused (it never arrived) and applies it once', async () => {
    const server = await fake();
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 5, backoffMs: 50 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    await server.stop();
    // The server restarts on the same port while the client backs off.
    setTimeout(() => void server.start(), 120);
    await expect(episode.step('a')).resolves.toMatchObject({ observation: 'ok', reward: 1 });
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
    expect(server.seen.find((s) => s.path === '/v1/episodes/e1/step')?.body).toEqual({ action: 'a' });
  });

  it('retries a 5xx of a GET, but never a 5xx of a step', async () => {
    const server = await fake();
    server.handler = (req, res, n) => {
      if (req.path.startsWith('/v1/tasks') && n <= 2) return json(res, 503, { statusCode: 503, code: 'ENV_UNAVAILABLE', message: 'warming up' });
      if (req.path === '/v1/episodes/e1/step') return json(res, 500, { statusCode: 500, code: 'ENV_INTERNAL', message: 'fake failed: boom' });
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 3, backoffMs: 10 });
    await expect(env.tasks.get('test', 2)).resolves.toEqual({ n: 2 });
    expect(server.seen.filter((s) => s.path.startsWith('/v1/tasks'))).toHaveLength(3);

    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    await expect(episode.step('a')).rejects.toMatchObject({ code: 'ENV_INTERNAL', message: 'fake failed: boom' });
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
  });

  it("gives up on a GET that keeps failing with the server's code, and reports a non-JSON 5xx of a step", async () => {
    const server = await fake();
    server.handler = (req, res, n) => {
      if (req.path.startsWith('/v1/tasks')) return json(res, 503, { statusCode: 503, code: 'ENV_SANDBOX_UNAVAILABLE', message: 'no bwrap' });
      if (req.path === '/v1/episodes/e1/step') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end('<html>Bad Gateway</html>');
      }
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 3, backoffMs: 10 });
    await expect(env.tasks.get('test', 0)).rejects.toMatchObject({ code: 'ENV_SANDBOX_UNAVAILABLE', message: 'no bwrap' });
    expect(server.seen.filter((s) => s.path.startsWith('/v1/tasks'))).toHaveLength(3);
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    await expect(episode.step('a')).rejects.toMatchObject({ code: 'ENV_UNAVAILABLE', message: `POST ${server.url}/v1/episodes/e1/step answered 502 with non-JSON` });
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
  });

  it("keeps the server's 4xx code and does not retry it", async () => {
    const server = await fake();
    server.handler = (req, res, n) => {
      if (req.path === '/v1/episodes/e1/step')
        return json(res, 404, { statusCode: 404, code: 'ENV_EPISODE_CLOSED', message: 'Episode e1 does not exist or has expired', field: 'id' });
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 3, backoffMs: 10 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    await expect(episode.step('a')).rejects.toMatchObject({ code: 'ENV_EPISODE_CLOSED', field: 'id' });
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
  });

  it('times out a step that gets no answer with ENV_TIMEOUT and does not send it again', async () => {
    const server = await fake();
    const held: ServerResponse[] = [];
    server.handler = (req, res, n) => {
      if (req.path === '/v1/episodes/e1/step') return void held.push(res); // never answered
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 5, backoffMs: 10, timeoutMs: 300 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    const started = Date.now();
    const error = await failure(episode.step('a'));
    expect(error).toBeInstanceOf(EnvironmentError);
    expect(error).toMatchObject({ code: 'ENV_TIMEOUT', message: `POST ${server.url}/v1/episodes/e1/step took longer than 300 ms` });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await new Promise((r) => setTimeout(r, 100)); // room for a wrong retry to arrive
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
    held.forEach((res) => res.destroy());
  });

  it('fails a step whose server dies mid-call with ENV_UNAVAILABLE, without sending it twice', async () => {
    const server = await fake();
    server.handler = (req, res, n) => {
      if (req.path === '/v1/episodes/e1/step') return void res.socket?.destroy(); // took the step, then crashed
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 5, backoffMs: 10 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    const error = await failure(episode.step('a'));
    expect(error).toBeInstanceOf(EnvironmentError);
    expect(error.code).toBe('ENV_UNAVAILABLE');
    expect(error.message).toMatch(new RegExp(`^Lost the connection to environment server ${server.url} during POST /v1/episodes/e1/step .*not retried`));
    await new Promise((r) => setTimeout(r, 100));
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
  });

  it('retries a GET whose connection was cut (reading twice is harmless)', async () => {
    const server = await fake();
    server.handler = (req, res, n) => {
      if (req.path.startsWith('/v1/tasks') && n === 1) return void res.socket?.destroy();
      healthy(req, res, n);
    };
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 3, backoffMs: 10 });
    await expect(env.tasks.get('test', 1)).resolves.toEqual({ n: 1 });
    expect(server.seen.filter((s) => s.path.startsWith('/v1/tasks'))).toHaveLength(2);
  });

  it('fails mid-episode with ENV_UNAVAILABLE naming the URL when the server is gone for good', async () => {
    const server = await fake();
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 3, backoffMs: 10 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    await expect(episode.step('a')).resolves.toMatchObject({ reward: 1 });
    await server.stop();
    await expect(episode.step('b')).rejects.toMatchObject({
      code: 'ENV_UNAVAILABLE',
      message: expect.stringContaining(`Environment server ${server.url} is unreachable after 3 attempts`),
    });
    await expect(episode.close()).resolves.toBeUndefined(); // closing a lost episode never throws
    expect(server.count('POST', '/v1/episodes/e1/step')).toBe(1);
  });

  it('refuses a server that speaks another protocol version', async () => {
    const server = await fake();
    server.handler = (req, res) => json(res, 200, { ...INFO, protocol_version: '2' });
    await expect(RemoteEnvironment.connect({ url: server.url })).rejects.toMatchObject({
      code: 'ENV_UNAVAILABLE',
      message: `${server.url} speaks protocol 2; this client speaks ${PROTOCOL_VERSION}`,
    });
  });

  it('checks every answer with the protocol schema: a malformed one is ENV_UNAVAILABLE naming the field, not a crash later', async () => {
    const server = await fake();
    server.handler = (req, res) => json(res, 200, { ...INFO, tasks: { train: 'lots', test: 3 } });
    expect(await failure(RemoteEnvironment.connect({ url: server.url }))).toMatchObject({
      code: 'ENV_UNAVAILABLE',
      field: 'tasks.train',
      message: expect.stringContaining(`GET ${server.url}/v1/info: the answer does not fit the protocol (tasks.train: `),
    });

    server.handler = healthy;
    const env = await RemoteEnvironment.connect({ url: server.url });
    const answers: Record<string, unknown> = {};
    server.handler = (req, res) => (answers[req.path] !== undefined ? json(res, 200, answers[req.path]) : healthy(req, res, 1));

    answers['/v1/episodes'] = { episode_id: 'e1', messages: [{ role: 'robot', content: 'go' }], task: {} };
    expect(await failure(env.newEpisode().reset({ n: 0 }, 1))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'messages.0.role' });
    delete answers['/v1/episodes'];

    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    for (const [answer, field] of [
      [{ observation: 'ok', reward: 'high', done: false, info: {} }, 'reward'],
      [{ observation: 'ok', reward: 1, info: {} }, 'done'],
      [{ observation: 'ok', reward: 1, done: false, info: [] }, 'info'],
      [{ observation: 'ok', observation_role: 'narrator', reward: 1, done: false, info: {} }, 'observation_role'],
    ] as const) {
      answers['/v1/episodes/e1/step'] = answer;
      expect(await failure(episode.step('a'))).toMatchObject({ code: 'ENV_UNAVAILABLE', field });
    }
    // What the protocol lets a server leave out: the observation's role (a user message).
    answers['/v1/episodes/e1/step'] = { observation: 'ok', reward: 1, done: false, info: {} };
    expect(await episode.step('a')).toEqual({ observation: 'ok', observationRole: 'user', reward: 1, done: false, info: {} });

    answers['/v1/tasks?split=test&offset=0&limit=100'] = { split: 'test', offset: 0, total: 3, tasks: 'none' };
    expect(await failure(env.tasks.get('test', 1))).toMatchObject({ code: 'ENV_UNAVAILABLE', field: 'tasks' });
  });
});

describe('a malformed answer, from a remote or an in-process environment', () => {
  /** The part of the message after the call it names: what was wrong, in the schemas' words. */
  const fault = (error: Error) => error.message.slice(error.message.indexOf(': the answer does not fit'));

  const steps: Array<[string, Record<string, unknown>]> = [
    ['a reward that is not a number', { observation: 'x', reward: 'high', done: false, info: {} }],
    ['no done', { observation: 'x', reward: 1, info: {} }],
    ['info that is a list', { observation: 'x', reward: 1, done: true, info: [] }],
    ['an observation over the cap', { observation: 'y'.repeat(1_000_001), reward: 0, done: true, info: {} }],
  ];

  it.each(steps)('is refused in the same words: %s', async (_what, step) => {
    const server = await fake();
    server.handler = (req, res) => (req.path === '/v1/episodes/e1/step' ? json(res, 200, step) : healthy(req, res, 1));
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 0 });
    const episode = env.newEpisode();
    await episode.reset({ n: 0 }, 1);
    const remote = await failure(episode.step('a'));
    let local: Error | undefined;
    try {
      parseStepAnswer(step, 'step');
    } catch (error) {
      local = error as Error;
    }
    expect(remote).toMatchObject({ code: 'ENV_UNAVAILABLE' });
    expect(local).toMatchObject({ code: 'ENV_UNAVAILABLE', field: remote.field });
    expect(fault(local!)).toBe(fault(remote));
    expect(local!.message.startsWith('step: the answer does not fit the protocol (')).toBe(true);
  });

  it('first messages too: none at all', async () => {
    const server = await fake();
    server.handler = (req, res) => (req.method === 'POST' && req.path === '/v1/episodes' ? json(res, 201, { episode_id: 'e1', messages: [], task: {} }) : healthy(req, res, 1));
    const env = await RemoteEnvironment.connect({ url: server.url, retries: 0 });
    const remote = await failure(env.newEpisode().reset({ n: 0 }, 1));
    expect(() => parseResetAnswer([], 'reset')).toThrow(fault(remote));
    expect(fault(remote)).toBe(': the answer does not fit the protocol (messages: Too small: expected array to have >=1 items)');
  });
});
