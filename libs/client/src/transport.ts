import createClient, { type Client } from 'openapi-fetch';
import { OpenTinkerError } from './errors';
import type { paths } from './generated/schema';
import { parseRetryAfter, RetryOptions } from './retry-policy';
import { FetchLike, retryingFetch } from './retrying-fetch';

/** How the client reaches the server. */
export interface TransportOptions {
  /** The server's root URL, e.g. `http://127.0.0.1:8780`. */
  baseUrl: string;
  /** An API key (`otk_…`), sent as a bearer token. Health checks need none. */
  apiKey?: string;
  /** A fetch to use instead of the global one (a proxy agent, a test double, a browser polyfill). */
  fetch?: FetchLike;
  /** How idempotent requests are retried; `{ retries: 0 }` turns retrying off. */
  retry?: RetryOptions;
}

/** What openapi-fetch resolves with. */
interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The typed openapi-fetch client plus the two things every call needs: a fetch that retries only
 * where that is safe, and one place that turns failures into {@link OpenTinkerError}s.
 */
export class Transport {
  readonly baseUrl: string;
  /** The generated, fully typed client (every route of the OpenAPI document). */
  readonly api: Client<paths>;
  /** Retries connection failures, transient 5xx and 429 with Retry-After: for idempotent requests. */
  readonly idempotentFetch: FetchLike;
  /** Tries once: for everything else (submitting a job twice is worse than an error). */
  readonly onceFetch: FetchLike;
  /** The `Authorization` header value, for requests made outside openapi-fetch (streamed uploads in Node). */
  readonly authorization: string | undefined;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.authorization = options.apiKey ? `Bearer ${options.apiKey}` : undefined;
    // Late-bound: a browser's fetch must be called unbound, and tests may replace the global.
    const base: FetchLike = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.onceFetch = base;
    this.idempotentFetch = retryingFetch(base, options.retry);
    const byMethod: FetchLike = (request, init) => (request.method === 'GET' || request.method === 'HEAD' ? this.idempotentFetch : this.onceFetch)(request, init);
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: byMethod as (input: Request) => Promise<Response>,
      headers: this.authorization ? { Authorization: this.authorization } : undefined,
    });
  }

  /**
   * Awaits an openapi-fetch call and returns its data, or throws: the server's error as an
   * {@link OpenTinkerError}, a connection failure as `OT_ERR_CONNECTION`, an abort as the signal's reason.
   */
  async call<T>(pending: Promise<FetchResult<T>>, signal?: AbortSignal | null): Promise<T> {
    return (await this.send(pending, signal)).data as T;
  }

  /** Like {@link call}, also returning the response (headers, or a body left unread). */
  async send<T>(pending: Promise<FetchResult<T>>, signal?: AbortSignal | null): Promise<FetchResult<T>> {
    let result: FetchResult<T>;
    try {
      result = await pending;
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof OpenTinkerError) throw error;
      throw OpenTinkerError.connection(this.baseUrl, error);
    }
    if (!result.response.ok) {
      throw OpenTinkerError.fromResponse(result.response, result.error, parseRetryAfter(result.response.headers.get('retry-after')) ?? undefined);
    }
    return result;
  }
}
