/**
 * Server-Sent Events over fetch. `EventSource` cannot send an `Authorization` header, so the job
 * stream is read with fetch and parsed here; a dropped connection is resumed with `Last-Event-ID`, which
 * the server answers with exactly the events after that id.
 */
import { errorFromResponse } from './api.mjs';
// @opentinker/client's parser (its browser build, served as /assets/sse-parser.mjs).
import { SseParser } from './sse-parser.mjs';

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/**
 * Follows an event stream until its `end` event, reconnecting after drops and resuming after the last
 * event id received. Each event's JSON data is parsed. Errors that a retry cannot fix (401, 403, 404) are
 * thrown; network errors and 5xx answers are retried with backoff.
 *
 * Resolves with `{ ended, lastEventId }`: `ended` is true after the `end` event, false when `signal`
 * aborted first.
 *
 * @example
 * await followEventStream(`/v1/jobs/${id}/events`, {
 *   headers: { authorization: `Bearer ${key}` },
 *   onEvent: (e) => console.log(e.event, e.data),
 *   onStatus: (s) => console.log(s), // 'connecting' | 'live' | 'reconnecting' | 'ended'
 * });
 */
export async function followEventStream(url, options = {}) {
  const { headers = {}, onEvent = () => {}, onStatus = () => {}, signal, fetch: fetchImpl = globalThis.fetch.bind(globalThis), retryMs = 500, maxRetryMs = 10_000 } = options;
  let lastEventId = options.lastEventId;
  let delay = retryMs;
  onStatus('connecting');
  while (!signal?.aborted) {
    let res;
    try {
      const requestHeaders = { accept: 'text/event-stream', ...headers };
      if (lastEventId !== undefined) requestHeaders['last-event-id'] = String(lastEventId);
      res = await fetchImpl(url, { headers: requestHeaders, signal, cache: 'no-store' });
    } catch {
      if (signal?.aborted) break;
      res = null;
    }
    if (res && !res.ok) {
      const error = await errorFromResponse(res);
      if (res.status < 500 && res.status !== 429) throw error;
      res = null;
    }
    if (res?.body) {
      onStatus('live');
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const e of parser.push(decoder.decode(value, { stream: true }))) {
            delay = retryMs; // data flowed: the next drop starts over from the short delay
            if (e.id !== undefined) lastEventId = e.id;
            let data = e.data;
            try {
              data = JSON.parse(e.data);
            } catch {
              // not JSON: hand over the text as it is
            }
            onEvent({ id: e.id, event: e.event, data });
            if (e.event === 'end') {
              reader.cancel().catch(() => {});
              onStatus('ended');
              return { ended: true, lastEventId };
            }
          }
        }
      } catch {
        // the connection dropped mid-stream: reconnect below
      }
    }
    if (signal?.aborted) break;
    onStatus('reconnecting');
    await sleep(delay, signal);
    delay = Math.min(delay * 2, maxRetryMs);
  }
  return { ended: false, lastEventId };
}
