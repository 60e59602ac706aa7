import type { components } from './generated/schema';

/** The stable error codes the server sends (`ErrorCode` in the OpenAPI document). */
export type ServerErrorCode = components['schemas']['ErrorCode'];

/**
 * Codes the client itself raises, for failures that never produced a server error body:
 * - `OT_ERR_CONNECTION`: the server could not be reached (refused, DNS, TLS, reset); `status` is 0.
 * - `OT_ERR_BAD_RESPONSE`: something answered, but not with an OpenTinker error body or event stream
 *   (a proxy's HTML error page, a truncated body, an event that is not JSON).
 * - `OT_ERR_SESSION_CALL_FAILED`: a training session's job runner answered a call with an error.
 * - `OT_ERR_REQUEST_FAILED`: a Tinker request's future failed (the server's `{error, category}`; see
 *   {@link OpenTinkerError.category}).
 * - `OT_ERR_INVALID_INPUT`: the client refused an input before sending it (a token id that is not an
 *   int32, a tensor whose shape does not fit its values); `field` names it.
 */
export type ClientErrorCode = 'OT_ERR_CONNECTION' | 'OT_ERR_BAD_RESPONSE' | 'OT_ERR_SESSION_CALL_FAILED' | 'OT_ERR_REQUEST_FAILED' | 'OT_ERR_INVALID_INPUT';

/**
 * Whose mistake a failure was: `user` for the caller's (a 4xx other than 408 and 429, a Tinker future
 * failed with category `user`, an input refused before sending), `server` for everything a retry or
 * the operator might fix, `unknown` when a failed Tinker future said so.
 */
export type ErrorCategory = 'user' | 'server' | 'unknown';

/** Every code an {@link OpenTinkerError} can carry. */
export type OpenTinkerErrorCode = ServerErrorCode | ClientErrorCode;

/** What a server error body looks like (`ErrorDto`). */
export type ErrorBody = components['schemas']['ErrorDto'];

/**
 * Thrown by every client method that fails. `code` is stable (switch on it, not on `message`);
 * `field` is the dotted path of the offending input when the server named one.
 *
 * @example
 * ```ts
 * try {
 *   await client.jobs.submit({ kind: 'sleep', resources: { tpus: 1 } } as never);
 * } catch (error) {
 *   if (isOpenTinkerError(error) && error.code === 'OT_ERR_VALIDATION') {
 *     console.error(`Fix ${error.field}: ${error.message}`); // Fix resources.tpus: Unknown field …
 *   }
 * }
 * ```
 */
export class OpenTinkerError extends Error {
  override readonly name = 'OpenTinkerError';
  /** Marks instances across copies of this package (a bundle may hold two), where `instanceof` fails. */
  readonly isOpenTinkerError = true as const;

  constructor(
    readonly code: OpenTinkerErrorCode,
    message: string,
    readonly status: number,
    readonly options: {
      /** Dotted path of the offending input (`resources.gpus`). */
      field?: string;
      /** Every problem found, when the server found several. */
      details?: unknown;
      /** The URL of the request that failed. */
      url?: string;
      /** How long the server asked to wait (`Retry-After`), in milliseconds. */
      retryAfterMs?: number;
      /** Whose mistake it was, when the server said (a failed Tinker future); otherwise derived from `status`. */
      category?: ErrorCategory;
      /** The Tinker request (`request_id`) whose future failed. */
      requestId?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }

  get field(): string | undefined {
    return this.options.field;
  }

  get details(): unknown {
    return this.options.details;
  }

  get url(): string | undefined {
    return this.options.url;
  }

  get retryAfterMs(): number | undefined {
    return this.options.retryAfterMs;
  }

  /** See {@link ErrorCategory}: the server's word for a failed Tinker future, else read from the HTTP status. */
  get category(): ErrorCategory {
    if (this.options.category) return this.options.category;
    if (this.code === 'OT_ERR_INVALID_INPUT') return 'user';
    return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429 ? 'user' : 'server';
  }

  get requestId(): string | undefined {
    return this.options.requestId;
  }

  /**
   * The error for a response that is not 2xx: the server's own code, message and field when the body
   * is an OpenTinker error body, else `OT_ERR_BAD_RESPONSE` with the start of whatever came back.
   */
  static fromResponse(response: Response, body: unknown, retryAfterMs?: number): OpenTinkerError {
    const url = response.url || undefined;
    if (isErrorBody(body)) {
      return new OpenTinkerError(body.code, body.message, response.status, { field: body.field, details: body.details, url, retryAfterMs });
    }
    const text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
    const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    return new OpenTinkerError(
      'OT_ERR_BAD_RESPONSE',
      `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''} from ${url ?? 'the server'}${excerpt ? `: ${excerpt}` : ''}`,
      response.status,
      { url, retryAfterMs },
    );
  }

  /** The error for a request that never got an answer. */
  static connection(baseUrl: string, cause: unknown): OpenTinkerError {
    return new OpenTinkerError('OT_ERR_CONNECTION', `Cannot reach the OpenTinker server at ${baseUrl} (${describeCause(cause)})`, 0, {
      url: baseUrl,
      cause,
    });
  }
}

/**
 * True for an {@link OpenTinkerError}, also one thrown by another copy of this package.
 *
 * @example
 * ```ts
 * if (isOpenTinkerError(error) && error.code === 'OT_ERR_CONNECTION') console.error(error.message);
 * ```
 */
export function isOpenTinkerError(error: unknown): error is OpenTinkerError {
  return error instanceof OpenTinkerError || (typeof error === 'object' && error !== null && (error as { isOpenTinkerError?: unknown }).isOpenTinkerError === true);
}

function isErrorBody(body: unknown): body is ErrorBody {
  const b = body as Partial<ErrorBody> | null;
  return typeof b === 'object' && b !== null && typeof b.code === 'string' && typeof b.message === 'string';
}

/** Node's fetch says only "fetch failed"; the useful part (ECONNREFUSED, ENOTFOUND) is in `cause`. */
function describeCause(cause: unknown): string {
  const inner = (cause as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (inner && typeof inner.code === 'string') return inner.code;
  if (inner && typeof inner.message === 'string' && inner.message) return inner.message;
  return (cause as Error)?.message ?? String(cause);
}

/** True for the error an aborted fetch or an aborted wait rejects with. */
export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && ((error as Error).name === 'AbortError' || (error as Error).name === 'TimeoutError');
}
