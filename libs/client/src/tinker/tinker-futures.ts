import { PROTOBUF_CONTENT_TYPE } from '@opentinker/tinker-wire';
import { OpenTinkerError, type ErrorCategory } from '../errors';
import { badResponse, errorOf, readJson, type TinkerHttp } from './tinker-http';

/** What a request's future resolved with: a JSON result, or protobuf bytes (forward/backward and sample results). */
export type FutureAnswer = { json: Record<string, unknown> } | { protobuf: Uint8Array };

/** Request types (`X-Tinker-Request-Type`), as the SDK names them. */
export type TinkerRequestType = 'CreateModel' | 'ForwardBackward' | 'Forward' | 'OptimStep' | 'SaveWeights' | 'SaveWeightsForSampler' | 'LoadWeights' | 'Sample';

/** Whether the server is working on a request (`active`) or it waits (for devices, for a rate limit), and why. */
export interface QueueStateChange {
  requestId: string;
  requestType: TinkerRequestType;
  queueState: 'active' | 'paused_capacity' | 'paused_rate_limit' | 'unknown';
  reason?: string;
}

export interface PollOptions {
  signal?: AbortSignal;
  /** Called when a poll says the request waits or runs (`try_again` with its `queue_state`). */
  onQueueState?: (change: QueueStateChange) => void;
}

/** How long one poll may take: the server holds it up to `tinker_poll_seconds` (30 s by default). */
const POLL_TIMEOUT_MS = 45_000;
/** A 400 without a readable answer is polled again this many times (a proxy's stray 400), as the SDK does. */
const MAX_BAD_REQUEST_RETRIES = 3;
const PROTOBUF_RESULTS = new Set<TinkerRequestType>(['ForwardBackward', 'Forward', 'Sample']);

/** The future's promise is gone (410): the SDK resubmits a sample, and fails any other request. */
export class FutureGoneError extends OpenTinkerError {}

/**
 * Waits for a submitted request's result as the SDK does: `retrieve_future` again at once after each
 * `try_again` (the server holds each poll), again after 408 or a 5xx (after a short pause, so a broken
 * server is not hammered), after a connection failure or 429 with backoff (1, 2, 4 … 30 s), three more
 * times after a 400. A failed future (`{error, category}`) throws `OT_ERR_REQUEST_FAILED` with the
 * server's category; a 410 throws {@link FutureGoneError}; any other 4xx the server's error. Runs until
 * an answer or the signal aborts.
 */
export async function pollFuture(http: TinkerHttp, requestId: string, requestType: TinkerRequestType, options: PollOptions = {}): Promise<FutureAnswer> {
  let allowMetadataOnly = true;
  let badRequests = 0;
  /** Connection failures and 429s in a row (the SDK's backoff exponent, reset by any other answer). */
  let backoffs = 0;
  let serverErrors = 0;
  for (let iteration = 0; ; iteration++) {
    options.signal?.throwIfAborted();
    let response: Response;
    try {
      response = await http.attempt(
        'POST',
        'retrieve_future',
        { json: { request_id: requestId, allow_metadata_only: allowMetadataOnly } },
        {
          signal: options.signal,
          maxRetries: 0,
          timeoutMs: POLL_TIMEOUT_MS,
          headers: {
            accept: PROTOBUF_RESULTS.has(requestType) ? PROTOBUF_CONTENT_TYPE : 'application/json',
            'x-tinker-request-type': requestType,
            'x-tinker-request-iteration': String(iteration),
          },
        },
      );
    } catch {
      if (options.signal?.aborted) throw options.signal.reason;
      await http.sleep(Math.min(2 ** backoffs++, 30) * 1000, options.signal);
      continue;
    }
    const status = response.status;
    if (status !== 429) backoffs = 0;
    if (status === 200) {
      if ((response.headers.get('content-type') ?? '').includes(PROTOBUF_CONTENT_TYPE)) return { protobuf: new Uint8Array(await response.arrayBuffer()) };
      const body = await readJson(response);
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badResponse(response, 'a future answered with something that is not a JSON object');
      const answer = body as Record<string, unknown>;
      if (answer.type === 'try_again') {
        options.onQueueState?.({
          requestId,
          requestType,
          queueState: queueState(answer.queue_state),
          reason: typeof answer.queue_state_reason === 'string' ? answer.queue_state_reason : undefined,
        });
        continue;
      }
      if (answer.status === 'complete_metadata') {
        allowMetadataOnly = false;
        continue;
      }
      if ('error' in answer) throw failed(requestId, answer);
      if (PROTOBUF_RESULTS.has(requestType)) throw badResponse(response, `a ${requestType} result came as JSON, not protobuf`);
      return { json: answer };
    }
    if (status === 408 || status >= 500) {
      await response.body?.cancel().catch(() => undefined);
      if (status >= 500) await http.sleep(Math.min(250 * 2 ** serverErrors++, 5000), options.signal);
      continue;
    }
    if (status === 429) {
      await response.body?.cancel().catch(() => undefined);
      await http.sleep(Math.min(2 ** backoffs++, 30) * 1000, options.signal);
      continue;
    }
    const error = await errorOf(response);
    if (status === 400 && badRequests < MAX_BAD_REQUEST_RETRIES && error.code === 'OT_ERR_BAD_RESPONSE') {
      badRequests++;
      continue;
    }
    if (status === 410) throw new FutureGoneError(error.code, error.message, 410, { ...error.options, requestId });
    throw new OpenTinkerError(error.code, error.message, error.status, { ...error.options, requestId });
  }
}

function queueState(value: unknown): QueueStateChange['queueState'] {
  return value === 'active' || value === 'paused_capacity' || value === 'paused_rate_limit' ? value : 'unknown';
}

function failed(requestId: string, answer: Record<string, unknown>): OpenTinkerError {
  const category: ErrorCategory = answer.category === 'user' || answer.category === 'server' ? answer.category : 'unknown';
  return new OpenTinkerError('OT_ERR_REQUEST_FAILED', String(answer.error), 200, { category, requestId });
}

/**
 * Marks a promise's rejection as handled, and returns it: a request submitted now and awaited later (an
 * `optimStep` behind a `forwardBackward`) must not crash Node as an unhandled rejection meanwhile. Awaiting
 * it still throws.
 */
export function detached<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
