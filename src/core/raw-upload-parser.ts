import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';

/** Per Fastify instance: the upload routes and the content types each takes as a raw stream. */
const ROUTES = new WeakMap<FastifyInstance, Map<string, Set<string>>>();

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

/**
 * Hands `POST <url>` its body as the raw request stream for the given content types, so an upload goes
 * to disk chunk by chunk and Fastify's in-memory `bodyLimit` does not apply (the route's service
 * enforces its own size setting). Several routes may share a type (`application/octet-stream`); any
 * other route sent one of these types answers 415, as without a parser.
 *
 * @example
 * ```ts
 * allowRawUpload(fastify, '/v1/datasets', ['application/x-ndjson', 'application/octet-stream']);
 * ```
 */
export function allowRawUpload(fastify: FastifyInstance, url: string, types: readonly string[]): void {
  let routes = ROUTES.get(fastify);
  if (!routes) ROUTES.set(fastify, (routes = new Map()));
  routes.set(url, new Set(types));
  const table = routes;
  const fresh = types.filter((t) => !fastify.hasContentTypeParser(t));
  if (fresh.length === 0) return;
  fastify.addContentTypeParser(fresh, (request, payload, done) => {
    if (request.method === 'POST' && table.get(request.routeOptions.url ?? '')?.has(mediaType(request.headers['content-type']))) {
      done(null, payload);
      return;
    }
    const error = new Error(`Unsupported Media Type: ${request.headers['content-type']}`) as Error & { statusCode: number; code: string };
    error.statusCode = 415;
    error.code = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
    done(error, undefined);
  });
}

/** What a refused upload may still send before the connection is cut (see {@link drainRefused}). */
const DRAIN_BYTES = 32 * 1024 * 1024;
const DRAIN_MS = 5_000;

/**
 * Reads and drops what the client is still sending of a refused upload, within bounds, keeping the
 * connection open meanwhile. Closing at once would make the client's next write meet a TCP reset, which
 * can destroy the answer (a 413) before the client reads it; past the bounds the connection is cut.
 */
export function drainRefused(body: Readable): void {
  let dropped = 0;
  const cut = () => body.destroy();
  const timer = setTimeout(cut, DRAIN_MS);
  body.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) cut();
  });
  body.once('close', () => clearTimeout(timer));
  body.resume();
}
