import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenTinkerEnvironment } from './opentinker-environment';
import { PROTOCOL_VERSION } from './protocol';
import { RemoteEnvironment } from './remote-environment';

/**
 * The transport both remote environments share (`http-call.ts`) against real servers: a redirect is
 * never followed, whatever `fetch` the client is given, and an answer nested past the ceiling fails
 * the call cleanly.
 */
interface Served {
  url: string;
  seen: string[];
  server: Server;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Served> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

const INFO = {
  id: 'fake',
  version: '1.0.0',
  protocol_version: PROTOCOL_VERSION,
  description: 'd',
  turn_mode: 'single',
  task_source: 'generator',
  config_schema: {},
  config: {},
  tasks: { train: null, test: 3 },
};

/** A fetch that follows redirects whatever it is asked (as a user's wrapper might). */
const following: typeof fetch = (input, init) => fetch(input, { ...init, redirect: 'follow' });

describe('the remote environments never follow a redirect', () => {
  for (const [name, fetchImpl] of [
    ['the global fetch', globalThis.fetch],
    ['a fetch that follows redirects', following],
  ] as const) {
    it(`our protocol (${name}): a 307 of a call with a body fails it with ENV_UNAVAILABLE, the answer it led to unused`, async () => {
      const inside = await serve((_req, res) => json(res, 201, { episode_id: 'inside', messages: [{ role: 'user', content: 'secret' }], task: {} }));
      const env = await serve((req, res) => {
        if (req.url === '/v1/info') return json(res, 200, INFO);
        res.writeHead(307, { location: `${inside.url}${req.url}` });
        res.end();
      });
      const remote = await RemoteEnvironment.connect({ url: env.url, fetch: fetchImpl, retries: 3, backoffMs: 1 });
      const error = remote
        .newEpisode()
        .reset({}, 1)
        .then(
          () => null,
          (e: Error) => e,
        );
      expect(await error).toMatchObject({
        code: 'ENV_UNAVAILABLE',
        field: 'url',
        message: `POST ${env.url}/v1/episodes ${fetchImpl === following ? 'was redirected' : 'answered with a redirect (HTTP 307)'}; redirects are not followed`,
      });
      // Not retried; with the global fetch the address it named was never contacted.
      expect(env.seen).toEqual(['GET /v1/info', 'POST /v1/episodes']);
      if (fetchImpl === globalThis.fetch) expect(inside.seen).toEqual([]);
    });
  }

  it("OpenTinker's protocol: a redirected /health or /reset fails, nothing reaches the address it names", async () => {
    const inside = await serve((_req, res) => json(res, 200, { status: 'healthy', observation: 'secret' }));
    const bounceAll = await serve((req, res) => {
      res.writeHead(302, { location: `${inside.url}${req.url}` });
      res.end();
    });
    await expect(OpenTinkerEnvironment.connect({ url: bounceAll.url, retries: 2, backoffMs: 1 })).rejects.toMatchObject({
      code: 'ENV_UNAVAILABLE',
      message: expect.stringMatching(/\/health answered with a redirect \(HTTP 302\)/),
    });
    const bounceReset = await serve((req, res) => {
      if (req.method === 'GET' || req.url?.startsWith('/stats')) return json(res, 200, { status: 'healthy' });
      res.writeHead(308, { location: `${inside.url}${req.url}` });
      res.end();
    });
    // The caller's name for the url (urlField) leads the error and is its field.
    const env = await OpenTinkerEnvironment.connect({ url: bounceReset.url, retries: 2, backoffMs: 1, urlField: 'environment.url' });
    const episode = env.newEpisode();
    await expect(episode.reset({}, 1)).rejects.toMatchObject({
      code: 'ENV_UNAVAILABLE',
      field: 'environment.url',
      message: `environment.url: POST ${bounceReset.url}/reset answered with a redirect (HTTP 308); redirects are not followed`,
    });
    await episode.close();
    expect(inside.seen).toEqual([]);
  });
});

describe('answers nested past the ceiling', () => {
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);

  it('fail the call with ENV_UNAVAILABLE, on every kind of answer, never a stack overflow', async () => {
    const env = await serve((req, res) => {
      if (req.url === '/v1/info') return json(res, 200, INFO);
      if (req.url === '/v1/episodes') return json(res, 201, `{"episode_id":"e","messages":[],"task":${deep}}`);
      json(res, 400, `{"statusCode":400,"code":"ENV_BAD_REQUEST","message":"m","details":${deep}}`);
    });
    const remote = await RemoteEnvironment.connect({ url: env.url });
    await expect(remote.newEpisode().reset({}, 1)).rejects.toMatchObject({
      code: 'ENV_UNAVAILABLE',
      message: `POST ${env.url}/v1/episodes: the answer nests deeper than 64 levels`,
    });
    await expect(remote.tasks.get('test', 0)).rejects.toMatchObject({ code: 'ENV_UNAVAILABLE', message: expect.stringContaining('nests deeper than 64 levels') });
    const info = await serve((_req, res) => json(res, 200, `{"protocol_version":"${PROTOCOL_VERSION}","config_schema":${deep}}`));
    await expect(RemoteEnvironment.connect({ url: info.url })).rejects.toMatchObject({ code: 'ENV_UNAVAILABLE', message: expect.stringContaining('nests deeper') });
    const game = await serve((req, res) => (req.method === 'GET' ? json(res, 200, { status: 'healthy' }) : json(res, 200, `{"observation":${deep}}`)));
    const opentinker = await OpenTinkerEnvironment.connect({ url: game.url });
    await expect(opentinker.newEpisode().reset({}, 1)).rejects.toMatchObject({ code: 'ENV_UNAVAILABLE', message: expect.stringContaining('nests deeper') });
  });
});
