import { OpenTinkerError } from '../errors';
import { parseRetryAfter } from '../retry-policy';
import { abortableSleep, type FetchLike } from '../retrying-fetch';

/** How the Tinker clients reach the server. */
export interface TinkerHttpOptions {
  /** The server's root URL (`http://127.0.0.1:8780`); the Tinker routes are under `/api/v1`. */
  baseUrl: string;
  /** An API key (`otk_…`, or the SDK's form `tml-otk_…`). */
  apiKey?: string;
  /** A fetch to use instead of the global one. */
  fetch?: FetchLike;
  /**
   * Retries of one submission, as the SDK's HTTP layer makes them (default 10, 0.5 s doubling to 10 s,
   * or the server's `Retry-After` up to 60 s): after a connection failure or timeout, 408, 409, 429, a 5xx,
   * or a 400 with no body (a proxy's). Each retry carries the same `X-Idempotency-Key`. 0 turns them off.
   */
  maxRetries?: number;
  /** How long one attempt may take before it counts as a connection failure (default 60 s, the SDK's). */
  timeoutMs?: number;
}

/** One request's own choices. */
export interface TinkerRequestOptions {
  signal?: AbortSignal;
  /** Overrides {@link TinkerHttpOptions.maxRetries} (the heartbeat and `retrieve_future` make none). */
  maxRetries?: number;
  /** Overrides {@link TinkerHttpOptions.timeoutMs}. */
  timeoutMs?: number;
  headers?: Record<string, string>;
  /** `manual` to read a redirect's Location instead of following it. */
  redirect?: RequestRedirect;
}

/** A request body: JSON (an object), or bytes with their content type. */
export type TinkerBody = { json: unknown } | { bytes: Uint8Array; contentType: string };

export const DEFAULT_TINKER_MAX_RETRIES = 10;
const DEFAULT_TIMEOUT_MS = 60_000;
const INITIAL_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 10_000;
/** A `Retry-After` longer than this is not waited out (the SDK's bound); the usual backoff applies instead. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The HTTP side of the Tinker routes: the key, JSON and protobuf bodies, timeouts, the SDK's retries of
 * a submission (same `X-Idempotency-Key` across them), and failures as {@link OpenTinkerError}s.
 */
export class TinkerHttp {
  readonly baseUrl: string;
  private readonly fetch: FetchLike;
  private readonly headers: Record<string, string>;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;

  constructor(
    options: TinkerHttpOptions,
    /** Every wait between attempts and polls goes through this (tests replace it). */
    readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void> = abortableSleep,
    private readonly random: () => number = Math.random,
  ) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
    this.maxRetries = options.maxRetries ?? DEFAULT_TINKER_MAX_RETRIES;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * A request to `/api/v1/<path>` answered with JSON (an empty body reads as `{}`). `body` is sent as JSON,
   * unless it is `{bytes, contentType}`.
   */
  async json(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, options: TinkerRequestOptions = {}): Promise<unknown> {
    const response = await this.send(method, path, body === undefined ? undefined : isBytesBody(body) ? body : { json: body }, options);
    try {
      return await readJson(response);
    } catch (error) {
      // The body was cut off (the connection dropped, the timeout or the caller's signal fired meanwhile).
      if (options.signal?.aborted) throw options.signal.reason;
      if (error instanceof OpenTinkerError) throw error;
      throw OpenTinkerError.connection(this.baseUrl, error);
    }
  }

  /**
   * Sends until an answer that is not retried, and returns it when 2xx; otherwise throws the server's
   * error. Non-GET requests carry an `X-Idempotency-Key`, the same on every retry.
   */
  async send(method: 'GET' | 'POST' | 'DELETE', path: string, body: TinkerBody | undefined, options: TinkerRequestOptions = {}): Promise<Response> {
    const response = await this.attempt(method, path, body, options);
    if (response.ok) return response;
    throw await errorOf(response);
  }

  /** Like {@link send}, but returns a non-2xx answer instead of throwing (retrieve_future reads the status itself). */
  async attempt(method: 'GET' | 'POST' | 'DELETE', path: string, body: TinkerBody | undefined, options: TinkerRequestOptions = {}): Promise<Response> {
    const url = `${this.baseUrl}/api/v1/${path}`;
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    if (method !== 'GET') headers['x-idempotency-key'] = `opentinker-client-retry-${randomId()}`;
    let payload: BodyInit | undefined;
    if (body && 'json' in body) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body.json);
    } else if (body) {
      headers['content-type'] = body.contentType;
      payload = body.bytes as Uint8Array<ArrayBuffer>;
    }
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    for (let retries = 0; ; retries++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await this.fetch(new Request(url, { method, headers, body: payload, signal, redirect: options.redirect }));
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (retries >= maxRetries) {
          throw timeout.aborted
            ? new OpenTinkerError('OT_ERR_CONNECTION', `No answer from ${url} within ${timeoutMs} ms`, 0, { url, cause: error })
            : OpenTinkerError.connection(this.baseUrl, error);
        }
        await this.sleep(this.backoff(retries), options.signal);
        continue;
      }
      const delay = retries < maxRetries ? await this.retryDelay(response, retries) : null;
      if (delay === null) return response;
      await response.body?.cancel().catch(() => undefined);
      await this.sleep(delay, options.signal);
    }
  }

  /** The wait before retrying this answer, or null when it is final (the SDK's HTTP layer's rules). */
  private async retryDelay(response: Response, retries: number): Promise<number | null> {
    const says = response.headers.get('x-should-retry');
    let retry: boolean;
    if (says === 'true' || says === 'false') retry = says === 'true';
    else if (response.status === 400) retry = (await response.clone().text()).trim() === '';
    else retry = [408, 409, 429].includes(response.status) || response.status >= 500;
    if (!retry) return null;
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    return retryAfter !== null && retryAfter > 0 && retryAfter <= MAX_RETRY_AFTER_MS ? retryAfter : this.backoff(retries);
  }

  /** 0.5 s doubling to 10 s, less up to a quarter (the SDK's jitter). */
  backoff(retries: number): number {
    return Math.min(INITIAL_RETRY_DELAY_MS * 2 ** retries, MAX_RETRY_DELAY_MS) * (1 - 0.25 * this.random());
  }
}

/** A JSON answer's value; `{}` for an empty body, `OT_ERR_BAD_RESPONSE` for one that is not JSON. */
export async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw badResponse(response, `not JSON: ${excerpt(text)}`);
  }
}

/** The error of a non-2xx answer: the server's `{code, message, field}` when it sent one. */
export async function errorOf(response: Response): Promise<OpenTinkerError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: fromResponse quotes the text.
  }
  return OpenTinkerError.fromResponse(response, body, parseRetryAfter(response.headers.get('retry-after')) ?? undefined);
}

/** An answer this client cannot read (not the JSON or protobuf the route gives). */
export function badResponse(response: { url: string; status?: number }, what: string, cause?: unknown): OpenTinkerError {
  return new OpenTinkerError('OT_ERR_BAD_RESPONSE', `Unexpected answer from ${response.url || 'the server'}: ${what}`, response.status ?? 0, {
    url: response.url || undefined,
    cause,
  });
}

function isBytesBody(body: unknown): body is { bytes: Uint8Array; contentType: string } {
  return (
    typeof body === 'object' && body !== null && (body as { bytes?: unknown }).bytes instanceof Uint8Array && typeof (body as { contentType?: unknown }).contentType === 'string'
  );
}

function excerpt(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function randomId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return c?.randomUUID ? c.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
