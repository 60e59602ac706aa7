import { AttemptOutcome, retryDelay, RetryOptions } from './retry-policy';

/** The fetch signature the client uses (the standard one). */
export type FetchLike = (input: Request, init?: RequestInit) => Promise<Response>;

/**
 * Wraps `fetch` so that a request is tried again after a connection failure, a transient 5xx, or a 429
 * that says how long to wait (see {@link retryDelay}). It must only wrap requests that are safe to
 * repeat: the client uses it for GET and for cancel, never for submit or create. An aborted request is
 * not retried; the wait between attempts ends when the request's signal aborts.
 *
 * @example
 * ```ts
 * const get = retryingFetch((r) => fetch(r), { retries: 2 });
 * const res = await get(new Request('http://127.0.0.1:8780/health'));
 * ```
 */
export function retryingFetch(inner: FetchLike, options: RetryOptions = {}, sleep: (ms: number, signal?: AbortSignal) => Promise<void> = abortableSleep): FetchLike {
  return async (request, init) => {
    for (let retriesDone = 0; ; retriesDone++) {
      // Each attempt sends a copy: a Request's body can be read once.
      const attempt = request.clone();
      let outcome: AttemptOutcome;
      let response: Response | undefined;
      try {
        response = await inner(attempt, init);
        outcome = { kind: 'response', status: response.status, retryAfter: response.headers.get('retry-after') };
      } catch (error) {
        if (request.signal?.aborted) throw error;
        const delay = retryDelay({ kind: 'network' }, retriesDone, options);
        if (delay === null) throw error;
        await sleep(delay, request.signal);
        continue;
      }
      const delay = retryDelay(outcome, retriesDone, options);
      if (delay === null) return response;
      // Free the connection of the answer we are discarding.
      await response.body?.cancel().catch(() => undefined);
      await sleep(delay, request.signal);
    }
  };
}

/**
 * Resolves after `ms`, or rejects with the signal's reason once it aborts.
 *
 * @example
 * ```ts
 * await abortableSleep(100, AbortSignal.timeout(50)); // rejects with a TimeoutError
 * ```
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
