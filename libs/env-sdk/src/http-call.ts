import { EnvironmentError, EnvironmentErrorCode } from './errors';
import { DEFAULT_JSON_MAX_DEPTH, tooDeepAt } from './json-depth';
import type { ProtocolError } from './protocol';

/**
 * The HTTP client every remote environment transport uses (our `/v1` protocol in
 * `remote-environment.ts`, OpenTinker's game-server protocol in `opentinker-environment.ts`): one set of
 * timeouts, retry rules and error codes for both.
 *
 * It never follows a redirect, whatever `fetch` it is given: requests go out with `redirect: 'manual'`,
 * and an answer that is a redirect (or that a `fetch` ignoring that option reached by following one) is
 * an error. A redirect could send a call, body and token included, to an address the URL's owner never
 * named, which a host that checks the URL it was given has not checked. Answers nested deeper than
 * {@link DEFAULT_JSON_MAX_DEPTH} are an error too, before anything walks them.
 */
export interface CallOptions {
  /** Base URL, without a trailing slash. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  timeoutMs: number;
  retries: number;
  backoffMs: number;
  fetch: typeof fetch;
  /** See `RemoteEnvironmentOptions.opaqueErrors`. */
  opaqueErrors: boolean;
  /** See `RemoteEnvironmentOptions.urlField`. */
  urlField?: string;
}

/** How one request may be treated, beyond what its method says. */
export interface RequestOptions {
  /**
   * The request may be sent again after a lost connection or a 5xx (default: GETs and DELETEs only).
   * Set for POSTs whose second arrival changes nothing, e.g. OpenTinker's `/reset` of an instance id.
   */
  idempotent?: boolean;
  /**
   * Reads an error answer of a protocol whose error bodies are not {@link ProtocolError}s (FastAPI's
   * `{ detail }`): returns the error to throw, or null to fall back to the default handling. `body` is the
   * parsed JSON, or undefined when the answer was not JSON.
   */
  errorAnswer?: (status: number, body: unknown) => EnvironmentError | null;
}

/**
 * Failures that prove the request never reached the server (no connection was made), so any call,
 * even a `POST …/step`, can be sent again without being applied twice.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Failures after the connection was made (reset, closed by the other side): the server may have
 * received and even applied the request, so only idempotent calls are sent again.
 */
const CONNECTION_LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** A redirect the client was told of (`redirect: 'manual'`), or one a `fetch` followed anyway. */
function isRedirect(res: Response): boolean {
  return res.redirected || res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400);
}

/** GETs read and a DELETE of an episode that is already gone is harmless; POSTs create episodes or take steps. */
const isIdempotentMethod = (method: string) => method === 'GET' || method === 'DELETE';

/** The error codes of a failed `fetch` (undici puts them on `cause`, or on each of an AggregateError's `errors`). */
function failureCodes(error: unknown): string[] {
  const cause = (error as { cause?: { code?: unknown; errors?: Array<{ code?: unknown }> } })?.cause;
  const codes = [cause?.code, ...(cause?.errors ?? []).map((e) => e?.code)];
  return codes.filter((c): c is string => typeof c === 'string');
}

function describeFailure(error: unknown): string {
  const e = error as { message?: string; cause?: { message?: string } };
  return [e?.message, e?.cause?.message].filter(Boolean).join(': ') || String(error);
}

/**
 * One JSON call with the transport's rules: calls that could not connect are retried with exponential
 * backoff; idempotent ones also after a lost connection or a 5xx; a timeout is `ENV_TIMEOUT` and never
 * resent; a server that stays unreachable is `ENV_UNAVAILABLE` naming the URL.
 */
export async function call<T>(o: CallOptions, method: string, path: string, body?: unknown, r: RequestOptions = {}): Promise<T> {
  const idempotent = r.idempotent ?? isIdempotentMethod(method);
  const where = `${method} ${o.url}${path}`;
  // With opaqueErrors, what went wrong below the protocol is not described (see RemoteEnvironmentOptions).
  const detail = (text: string) => (o.opaqueErrors ? '' : ` (${text})`);
  const unreachable = () => new EnvironmentError('ENV_UNAVAILABLE', `Environment server ${o.url} is unreachable`);
  const notProtocol = () => new EnvironmentError('ENV_UNAVAILABLE', `${where}: the answer is not the environment protocol`);
  const attempts = Math.max(1, o.retries);
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, o.backoffMs * 2 ** (attempt - 1)));
    let res: Response;
    try {
      res = await o.fetch(o.url + path, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(o.timeoutMs),
      });
    } catch (error) {
      lastError = error;
      // A timeout may have fired after the server took the request: never resent.
      if ((error as Error)?.name === 'TimeoutError') {
        throw new EnvironmentError('ENV_TIMEOUT', `${where} took longer than ${o.timeoutMs} ms`);
      }
      const codes = failureCodes(error);
      if (codes.some((c) => NOT_SENT_CODES.has(c))) continue;
      if (codes.some((c) => CONNECTION_LOST_CODES.has(c))) {
        if (idempotent) continue;
        throw new EnvironmentError(
          'ENV_UNAVAILABLE',
          `Lost the connection to environment server ${o.url} during ${method} ${path}${detail(describeFailure(error))}; ` +
            'not retried, since the server may already have applied it',
        );
      }
      if (o.opaqueErrors) throw unreachable();
      throw new EnvironmentError('ENV_UNAVAILABLE', `${where} failed: ${describeFailure(error)}`);
    }
    if (isRedirect(res)) {
      await res.body?.cancel().catch(() => undefined);
      // Only what this server answered is described: the address it names was never contacted.
      const what = res.redirected ? 'was redirected' : `answered with a redirect${res.status ? ` (HTTP ${res.status})` : ''}`;
      throw new EnvironmentError('ENV_UNAVAILABLE', `${o.urlField ? `${o.urlField}: ` : ''}${where} ${what}; redirects are not followed`, o.urlField ?? 'url');
    }
    if (res.status === 204) return undefined as T;
    // A 5xx of an idempotent call is worth another attempt; a POST that got an answer was handled.
    const retryable = res.status >= 500 && res.status !== 501 && idempotent && attempt + 1 < attempts;
    let text: string;
    try {
      text = await res.text();
    } catch (error) {
      lastError = error;
      if (idempotent) continue;
      throw new EnvironmentError(
        'ENV_UNAVAILABLE',
        `Lost the connection to environment server ${o.url} while reading the answer to ${method} ${path}; not retried${detail(describeFailure(error))}`,
      );
    }
    let parsed: unknown;
    let isJson = true;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      isJson = false;
    }
    const deep = isJson ? tooDeepAt(parsed, DEFAULT_JSON_MAX_DEPTH) : null;
    if (deep) throw new EnvironmentError('ENV_UNAVAILABLE', `${where}: the answer nests deeper than ${DEFAULT_JSON_MAX_DEPTH} levels`);
    if (!isJson) {
      lastError = new Error(`answered ${res.status} with non-JSON`);
      if (retryable) continue;
      const translated = !res.ok ? r.errorAnswer?.(res.status, undefined) : null;
      if (translated) throw translated;
      if (o.opaqueErrors) throw notProtocol();
      throw new EnvironmentError('ENV_UNAVAILABLE', `${where} answered ${res.status} with non-JSON`);
    }
    if (res.ok) return parsed as T;
    if (retryable) {
      lastError = new Error(`answered ${res.status}`);
      continue;
    }
    const translated = r.errorAnswer?.(res.status, parsed);
    if (translated) throw translated;
    const err = (parsed ?? {}) as Partial<ProtocolError>;
    const isProtocolError = typeof err.code === 'string' && err.code.startsWith('ENV_') && typeof err.message === 'string';
    if (o.opaqueErrors && !isProtocolError) throw notProtocol();
    const code = (isProtocolError ? err.code : 'ENV_UNAVAILABLE') as EnvironmentErrorCode;
    throw new EnvironmentError(code, err.message ?? `${where} answered ${res.status}`, typeof err.field === 'string' ? err.field : undefined);
  }
  if (o.opaqueErrors) throw unreachable();
  throw new EnvironmentError('ENV_UNAVAILABLE', `Environment server ${o.url} is unreachable after ${attempts} attempts (${describeFailure(lastError)}); is it running?`);
}
