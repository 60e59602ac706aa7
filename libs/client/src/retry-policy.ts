/**
 * When to try a request again, and after how long. Only idempotent requests are ever retried (the
 * caller decides which those are); this module only judges the outcome of one attempt.
 */
export interface RetryOptions {
  /** Retries after the first attempt (0 turns retrying off). Default 3. */
  retries?: number;
  /** First backoff delay; doubled on each retry. Default 250 ms. */
  baseDelayMs?: number;
  /** Longest backoff delay. Default 5 s. */
  maxDelayMs?: number;
  /**
   * Longest `Retry-After` the client will wait out; a longer one fails at once with the server's error
   * (a rate limit of minutes is better reported than silently waited for). Default 30 s.
   */
  maxRetryAfterMs?: number;
}

/** What one attempt produced. */
export type AttemptOutcome = { kind: 'network' } | { kind: 'response'; status: number; retryAfter: string | null };

export const DEFAULT_RETRY: Required<RetryOptions> = { retries: 3, baseDelayMs: 250, maxDelayMs: 5_000, maxRetryAfterMs: 30_000 };

/** 501 (not implemented) will not change on a retry; these may. */
const TRANSIENT_STATUS = new Set([500, 502, 503, 504]);

/**
 * The delay before the next attempt, or `null` when the outcome should be returned to the caller.
 * `retriesDone` counts the retries already made. Connection failures and transient 5xx answers back
 * off exponentially with jitter (or wait the server's `Retry-After`); a 429 is retried only when it
 * says how long to wait.
 *
 * @example
 * ```ts
 * retryDelay({ kind: 'response', status: 429, retryAfter: '2' }, 0); // 2000
 * retryDelay({ kind: 'response', status: 400, retryAfter: null }, 0); // null
 * ```
 */
export function retryDelay(outcome: AttemptOutcome, retriesDone: number, options: RetryOptions = {}, now: number = Date.now(), random: () => number = Math.random): number | null {
  const o = { ...DEFAULT_RETRY, ...options };
  if (retriesDone >= o.retries) return null;
  if (outcome.kind === 'network') return backoffDelay(retriesDone, o, random);
  const retryAfterMs = parseRetryAfter(outcome.retryAfter, now);
  if (outcome.status === 429) {
    return retryAfterMs !== null && retryAfterMs <= o.maxRetryAfterMs ? retryAfterMs : null;
  }
  if (TRANSIENT_STATUS.has(outcome.status)) {
    if (retryAfterMs === null) return backoffDelay(retriesDone, o, random);
    return retryAfterMs <= o.maxRetryAfterMs ? retryAfterMs : null;
  }
  return null;
}

/**
 * Exponential backoff with "equal jitter": half the delay fixed, half random, so that many clients
 * cut off together do not come back in lockstep, yet none retries at once.
 *
 * @example
 * ```ts
 * backoffDelay(2, { baseDelayMs: 100, maxDelayMs: 10_000 }); // between 200 and 400
 * ```
 */
export function backoffDelay(retriesDone: number, options: Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'> = {}, random: () => number = Math.random): number {
  const base = options.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs;
  const max = options.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
  const full = Math.min(max, base * 2 ** retriesDone);
  return Math.round(full / 2 + (random() * full) / 2);
}

/**
 * `Retry-After` in milliseconds: either delay-seconds or an HTTP date. `null` when absent or unreadable.
 *
 * @example
 * ```ts
 * parseRetryAfter('3'); // 3000
 * parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', Date.parse('2026-10-21T07:27:58Z')); // 2000
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // An HTTP date always names its month; this keeps "-1" or "1.5" from parsing as a year.
  const date = /[a-z]/i.test(trimmed) ? Date.parse(trimmed) : NaN;
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
