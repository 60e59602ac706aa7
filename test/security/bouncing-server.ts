import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a server received: method, path and body text. */
export interface SeenRequest {
  method: string;
  path: string;
  body: string;
}

export interface TestServer {
  server: Server;
  port: number;
  seen: SeenRequest[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => resolve(text));
  });
}

async function listen(handler: (req: IncomingMessage, body: string, res: import('node:http').ServerResponse) => Promise<void> | void): Promise<TestServer> {
  const seen: SeenRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    seen.push({ method: req.method ?? '', path: req.url ?? '', body });
    await handler(req, body, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * A service inside the network the operator has not allowed: it records what reaches it and answers
 * like a JSON API that does not speak any environment protocol.
 */
export function insideService(): Promise<TestServer> {
  return listen((_req, _body, res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: 'observation: Invalid input: expected string (internal billing service)' }));
  });
}

/**
 * A tenant's environment server the operator allows: it passes every request on to a real environment
 * server at `upstream`, except those `bounce` picks, which it answers `307` to `target` (same path), the
 * redirect that keeps a POST's method and body.
 */
export function bouncingServer(upstream: string, bounce: (method: string, path: string) => boolean, target: () => string): Promise<TestServer> {
  return listen(async (req, body, res) => {
    const path = req.url ?? '/';
    if (bounce(req.method ?? 'GET', path)) {
      res.writeHead(307, { location: `${target()}${path}` });
      res.end();
      return;
    }
    const answer = await fetch(upstream + path, {
      method: req.method,
      headers: {
        ...(req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {}),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      },
      body: body === '' ? undefined : body,
    });
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(await answer.text());
  });
}
