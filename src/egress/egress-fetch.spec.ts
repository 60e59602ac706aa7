import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { egressFetch } from './egress-fetch';
import { WANDB_URL, type UrlPolicy } from './egress-policy';

interface Listening {
  port: number;
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  requests: string[];
  server: Server;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function listen(answer: (path: string) => { status: number; headers?: Record<string, string>; body?: string }, host = '127.0.0.1'): Promise<Listening> {
  const state = { port: 0, connections: 0, requests: [] as string[] } as Listening;
  const server = createServer((req, res) => {
    state.requests.push(`${req.method} ${req.url}`);
    const a = answer(req.url ?? '/');
    res.writeHead(a.status, a.headers ?? {});
    res.end(a.body ?? '');
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((r) => server.listen(0, host, r));
  servers.push(server);
  state.server = server;
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/** The cause of a `fetch failed`. */
async function cause(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const error = await p.then(
    () => null,
    (e: Error) => e,
  );
  expect(error).toBeInstanceOf(TypeError);
  return (error as Error & { cause: { code?: string; message: string } }).cause;
}

describe('egressFetch: the client of requests a tenant can aim', () => {
  it('follows no redirect: the 3xx is an error naming the field, and the address it names is never contacted', async () => {
    const inside = await listen(() => ({ status: 200, body: 'inside' }));
    for (const target of [`http://127.0.0.1:${inside.port}`, `http://localhost:${inside.port}`, `http://[::ffff:127.0.0.1]:${inside.port}`]) {
      const env = await listen((path) => ({ status: 307, headers: { location: `${target}${path}` } }));
      const f = egressFetch({ allow: [`127.0.0.1:${env.port}`], allowPublic: true, allowLoopback: false });
      const refused = await cause(f(`http://127.0.0.1:${env.port}/reset`, { method: 'POST', body: '{"secret":1}' }));
      expect(refused).toMatchObject({
        code: 'REDIRECT_REFUSED',
        message: `environment.url: http://127.0.0.1:${env.port} answered with a redirect (HTTP 307); redirects are not followed`,
      });
      // redirect: 'follow' asked explicitly is refused the same way; 'manual' gets the 3xx to handle.
      await expect(cause(f(`http://127.0.0.1:${env.port}/x`, { redirect: 'follow' }))).resolves.toMatchObject({ code: 'REDIRECT_REFUSED' });
      const manual = await f(`http://127.0.0.1:${env.port}/x`, { redirect: 'manual' });
      expect(manual.status).toBe(307);
    }
    expect(inside.connections).toBe(0);
  });

  it('checks every connection: IP literals (any form) before connecting, names on each lookup, port by port', async () => {
    const inside = await listen(() => ({ status: 200, body: '{}' }));
    const user: UrlPolicy = { allow: [], allowPublic: true, allowLoopback: false };
    for (const url of [
      `http://127.0.0.1:${inside.port}/`,
      `http://[::ffff:127.0.0.1]:${inside.port}/`,
      `http://[::ffff:0:127.0.0.1]:${inside.port}/`,
      `http://2130706433:${inside.port}/`,
      `http://0x7f.1:${inside.port}/`,
      `http://localhost:${inside.port}/`,
    ]) {
      const refused = await cause(egressFetch(user)(url));
      expect([url, refused.code]).toEqual([url, 'URL_NOT_ALLOWED']);
    }
    // An entry for one port opens that port only, literal or name.
    const onePort = egressFetch({ ...user, allow: [`127.0.0.1:${inside.port + 1}`] });
    await expect(cause(onePort(`http://127.0.0.1:${inside.port}/`))).resolves.toMatchObject({ code: 'URL_NOT_ALLOWED' });
    expect(inside.connections).toBe(0);
    // The admin reaches loopback; an entry opens its own port.
    expect((await egressFetch({ ...user, allowLoopback: true })(`http://localhost:${inside.port}/`)).status).toBe(200);
    expect((await egressFetch({ ...user, allow: [`127.0.0.1:${inside.port}`] })(`http://127.0.0.1:${inside.port}/`)).status).toBe(200);
  });

  it('refuses what no fetch should send: other schemes and credentials in the URL, in the words of the use', async () => {
    const user: UrlPolicy = { allow: [], allowPublic: true, allowLoopback: true };
    await expect(cause(egressFetch(user)('file:///etc/passwd'))).resolves.toMatchObject({ code: 'URL_NOT_ALLOWED', message: 'environment.url must be http:// or https://' });
    await expect(cause(egressFetch(user, WANDB_URL)('http://u:p@127.0.0.1:1/'))).resolves.toMatchObject({
      message: 'trainer.wandb.base_url must not carry credentials (use trainer.wandb.api_key)',
    });
  });
});
