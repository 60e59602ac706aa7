/**
 * Streamed uploads in Node through `node:http`. Node 20's fetch (undici 6) keeps every chunk of a
 * streamed request body until the request ends (measured: a 125 MiB upload held 125 MiB), so a large
 * file would sit in memory whole; `http.request` with `pipe` keeps it to a few chunks. Module names are
 * variables so that browser bundles never see `node:*` imports; browsers upload Blobs through fetch.
 */

interface NodeReadable {
  pipe(destination: NodeWritable): unknown;
  unpipe(destination?: NodeWritable): unknown;
  destroy(error?: Error): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
interface NodeWritable {
  on(event: 'error', listener: (error: Error) => void): unknown;
  destroy(error?: unknown): unknown;
}
interface NodeResponse {
  statusCode?: number;
  statusMessage?: string;
  headers: Record<string, string | string[] | undefined>;
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  on(event: 'end' | 'error', listener: (arg?: unknown) => void): unknown;
}
interface NodeRequest extends NodeWritable {
  on(event: 'response', listener: (response: NodeResponse) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
interface NodeHttp {
  request(url: URL, options: { method: string; headers: Record<string, string> }): NodeRequest;
}
interface NodeStreamModule {
  Readable: { from(source: AsyncIterable<Uint8Array>): NodeReadable; fromWeb(source: ReadableStream<Uint8Array>): NodeReadable };
}
interface NodeFsModule {
  createReadStream(path: string): NodeReadable;
  promises: { stat(path: string): Promise<{ isFile(): boolean }> };
}

/** True in Node (where a file path can be read and `node:http` exists). */
export function isNode(): boolean {
  return Boolean((globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node);
}

const load = <T>(name: string): Promise<T> => import(name) as Promise<T>;

/** Fails early, naming the path, for a missing file or a folder (before any byte is sent). */
export async function checkFile(path: string, invalid: (message: string) => Error): Promise<void> {
  const info = await (await load<NodeFsModule>('node:fs')).promises.stat(path).catch((error: Error) => {
    throw invalid(`Cannot read ${path}: ${error.message}`);
  });
  if (!info.isFile()) throw invalid(`${path} is not a file`);
}

/** A Node readable over a path, a web stream or any async iterable of bytes. */
export async function nodeReadable(source: string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<NodeReadable> {
  if (typeof source === 'string') return (await load<NodeFsModule>('node:fs')).createReadStream(source);
  const { Readable } = await load<NodeStreamModule>('node:stream');
  return source instanceof ReadableStream ? Readable.fromWeb(source) : Readable.from(source);
}

/**
 * POSTs `body` with backpressure and resolves with the answer as a fetch `Response` (so callers map
 * errors the same way). An early answer (413 mid-upload) stops sending and is returned as it is.
 */
export async function nodePost(url: string, headers: Record<string, string>, body: NodeReadable, signal?: AbortSignal): Promise<Response> {
  const target = new URL(url);
  const http = await load<NodeHttp>(target.protocol === 'https:' ? 'node:https' : 'node:http');
  return new Promise<Response>((resolve, reject) => {
    let answered = false;
    const request = http.request(target, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } });
    const stop = (error: unknown) => {
      body.unpipe(request);
      body.destroy();
      request.destroy();
      if (!answered) reject(error);
    };
    const onAbort = () => stop(signal?.reason);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('response', (response) => {
      answered = true;
      body.unpipe(request);
      body.destroy();
      const chunks: Uint8Array[] = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', (error) => reject(error));
      response.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        // An early answer leaves the request body unfinished: this connection cannot be reused.
        request.destroy();
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        const size = chunks.reduce((n, c) => n + c.byteLength, 0);
        const bytes = new Uint8Array(size);
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.byteLength;
        }
        resolve(new Response(bytes, { status: response.statusCode ?? 0, statusText: response.statusMessage ?? '', headers: responseHeaders }));
      });
    });
    // After an early answer the server closes the connection: the write side then fails, harmlessly.
    request.on('error', (error) => stop(error));
    body.on('error', (error) => stop(error));
    body.pipe(request);
  });
}
