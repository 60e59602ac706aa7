import { isOpenTinkerError, OpenTinkerError } from './errors';
import { backoffDelay, RetryOptions } from './retry-policy';
import { abortableSleep } from './retrying-fetch';
import { SseMessage, SseParser } from './sse-parser';
import type { Transport } from './transport';
import { JOB_EVENT_TYPES, JobEvent } from './types';

/** Options of {@link watchJobEvents} (and `client.watchJob`). */
export interface WatchJobOptions {
  /** Stops watching: the iterator rejects with the signal's reason and the connection is closed. */
  signal?: AbortSignal;
  /** Start after this event id (an id seen before): earlier events are not sent again. */
  after?: number;
  /**
   * Reconnections in a row that bring no new event before giving up with the last error. A
   * reconnection that brings events resets the count. Default 8 (about a minute of backoff).
   */
  maxReconnects?: number;
  /**
   * Reconnect when nothing at all arrived for this long. The server sends a comment every 15 s on a
   * quiet stream, so silence means a connection that died without closing (a sleeping laptop, a
   * proxy that dropped it). Default 45 s.
   */
  idleTimeoutMs?: number;
  /** Backoff between reconnections that bring nothing (a `retry:` field from the server overrides it). */
  backoff?: Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'>;
  /** Told about each reconnection before its delay, e.g. to log it. */
  onReconnect?: (info: { attempt: number; lastEventId: number | undefined; error: unknown; delayMs: number }) => void;
}

const DEFAULT_MAX_RECONNECTS = 8;
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;
const KNOWN = new Set<string>(JOB_EVENT_TYPES);

class StreamInterrupted extends Error {
  override readonly name = 'StreamInterrupted';
}

/**
 * A job's events as an async iterator over `GET /v1/jobs/:id/events`, read with fetch (so it sends
 * the API key, which `EventSource` cannot, and runs in browsers and Node alike). After a dropped or
 * silent connection it reconnects with `Last-Event-ID`, so no event is lost; an event that arrives
 * twice (a server replaying from an older id) is passed on once. It ends after the `end` event, which
 * the server sends once the job has ended and every earlier event has been delivered.
 *
 * @example
 * ```ts
 * for await (const event of watchJobEvents(transport, jobId)) {
 *   if (event.type === 'progress') console.log(`${event.data.step}/${event.data.total}`);
 *   if (event.type === 'end') console.log(`finished: ${event.data.state}`);
 * }
 * ```
 */
export async function* watchJobEvents(transport: Transport, id: string, options: WatchJobOptions = {}): AsyncGenerator<JobEvent, void, undefined> {
  const { signal } = options;
  const maxReconnects = options.maxReconnects ?? DEFAULT_MAX_RECONNECTS;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  let lastId = options.after;
  let failures = 0;
  let serverDelay: number | undefined;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const attempt = new AbortController();
    const onAbort = () => attempt.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let failure: unknown = undefined;
    let delivered = false;
    try {
      let body: ReadableStream<Uint8Array> | undefined;
      try {
        const { data } = await transport.send(
          transport.api.GET('/v1/jobs/{id}/events', {
            params: { path: { id }, header: lastId === undefined ? undefined : { 'Last-Event-ID': String(lastId) } },
            headers: { Accept: 'text/event-stream' },
            parseAs: 'stream',
            signal: attempt.signal,
            // Reconnecting is this loop's job; a second retry layer would only multiply the waits.
            fetch: transport.onceFetch,
          }),
          signal,
        );
        body = data ?? undefined;
        if (!body) failure = new OpenTinkerError('OT_ERR_BAD_RESPONSE', `The event stream of job ${id} had no body`, 200);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (!isTransient(error)) throw error;
        failure = error;
      }
      if (body) {
        reader = body.getReader();
        const decoder = new TextDecoder();
        const parser = new SseParser(lastId === undefined ? '' : String(lastId));
        const arm = () => {
          clearTimeout(idle);
          idle = setTimeout(() => attempt.abort(new StreamInterrupted(`No data for ${idleTimeoutMs} ms`)), idleTimeoutMs);
        };
        arm();
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (error) {
            if (signal?.aborted) throw signal.reason;
            failure = error;
            break;
          }
          if (chunk.done) {
            failure = new StreamInterrupted('The event stream closed before its end event');
            break;
          }
          const messages = parser.push(decoder.decode(chunk.value, { stream: true }));
          if (parser.reconnectionTime !== undefined) serverDelay = parser.reconnectionTime;
          for (const message of messages) {
            const event = toJobEvent(message, id);
            if (event.id !== undefined) {
              if (lastId !== undefined && event.id <= lastId) continue;
              lastId = event.id;
            }
            delivered = true;
            failures = 0;
            // A slow consumer is not a silent server: no idle timer while the event is being handled.
            clearTimeout(idle);
            yield event;
            if (event.type === 'end') return;
            arm();
          }
        }
      }
    } finally {
      clearTimeout(idle);
      signal?.removeEventListener('abort', onAbort);
      // Closes the connection when the consumer stopped early or the stream is being abandoned.
      attempt.abort();
      reader?.cancel().catch(() => undefined);
    }
    if (!delivered) failures++;
    if (failures > maxReconnects) {
      throw isOpenTinkerError(failure) ? failure : OpenTinkerError.connection(transport.baseUrl, failure);
    }
    const delayMs = serverDelay ?? backoffDelay(failures, options.backoff);
    options.onReconnect?.({ attempt: failures, lastEventId: lastId, error: failure, delayMs });
    await abortableSleep(delayMs, signal);
  }
}

/** Worth reconnecting for: no answer, a transient server error, or a rate limit. */
function isTransient(error: unknown): boolean {
  if (!isOpenTinkerError(error)) return true;
  return error.status === 0 || error.status >= 500 || error.status === 429;
}

function toJobEvent(message: SseMessage, jobId: string): JobEvent {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    throw new OpenTinkerError('OT_ERR_BAD_RESPONSE', `Job ${jobId}: event ${message.id ?? '(no id)'} is not JSON: ${message.data.slice(0, 200)}`, 200);
  }
  const id = message.id !== undefined && /^\d+$/.test(message.id) ? Number(message.id) : undefined;
  if (KNOWN.has(message.event)) return { type: message.event, id, data } as JobEvent;
  return { type: 'other', event: message.event, id, data };
}
