import { FakeTinkerServer, recordedSleep } from '../testing/fake-tinker-server';
import type { OpenTinkerError } from '../errors';
import { detached, FutureGoneError, pollFuture, type QueueStateChange } from './tinker-futures';
import { TinkerHttp } from './tinker-http';

function setup() {
  const fake = new FakeTinkerServer();
  const { waits, sleep } = recordedSleep();
  const http = new TinkerHttp({ baseUrl: 'http://tinker.test', fetch: fake.fetch }, sleep, () => 0);
  fake.results.set('r1', { json: { metrics: { grad_norm: 2 } } });
  return { fake, waits, http };
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

describe('pollFuture', () => {
  it('polls again at once after try_again, telling the queue state, with the SDK’s headers', async () => {
    const { fake, waits, http } = setup();
    fake.script('POST retrieve_future', { json: { type: 'try_again', request_id: 'r1', queue_state: 'paused_capacity', queue_state_reason: 'waiting for a worker' } });
    fake.tryAgains = 1;
    const changes: QueueStateChange[] = [];
    expect(await pollFuture(http, 'r1', 'OptimStep', { onQueueState: (c) => changes.push(c) })).toEqual({ json: { metrics: { grad_norm: 2 } } });
    expect(changes.map((c) => c.queueState)).toEqual(['paused_capacity', 'active']);
    expect(changes[0].reason).toBe('waiting for a worker');
    const polls = fake.sent('POST retrieve_future');
    expect(polls.map((p) => p.headers['x-tinker-request-iteration'])).toEqual(['0', '1', '2']);
    expect(polls[0].headers).toMatchObject({ 'x-tinker-request-type': 'OptimStep', accept: 'application/json' });
    expect(polls[0].json).toEqual({ request_id: 'r1', allow_metadata_only: true });
    expect(waits).toEqual([]);
  });

  it('asks for protobuf for forward/backward and sample results, and refuses them as JSON', async () => {
    const { fake, http } = setup();
    fake.results.set('fb', { protobuf: new Uint8Array([8, 1]) });
    expect(await pollFuture(http, 'fb', 'ForwardBackward')).toEqual({ protobuf: new Uint8Array([8, 1]) });
    expect(fake.sent('POST retrieve_future')[0].headers.accept).toBe('application/x-protobuf');
    expect(await errorOf(pollFuture(http, 'r1', 'Sample'))).toMatchObject({ code: 'OT_ERR_BAD_RESPONSE' });
  });

  it('throws a failed future as OT_ERR_REQUEST_FAILED with the server’s category', async () => {
    const { fake, http } = setup();
    fake.results.set('bad', { json: { error: 'the prompt is longer than the model’s context', category: 'user' } });
    fake.results.set('odd', { json: { error: 'boom', category: 'something-new' } });
    const error = await errorOf(pollFuture(http, 'bad', 'Sample'));
    expect(error).toMatchObject({ code: 'OT_ERR_REQUEST_FAILED', category: 'user', requestId: 'bad', message: expect.stringMatching(/context/) });
    expect(await errorOf(pollFuture(http, 'odd', 'OptimStep'))).toMatchObject({ category: 'unknown' });
  });

  it('polls again after 408, 5xx (with a short pause), connection failures and 429 (backing off), and after a metadata-only answer', async () => {
    const { fake, waits, http } = setup();
    fake.script('POST retrieve_future', { status: 408 }, { status: 502 }, 'down', 'down', { status: 429 }, { json: { status: 'complete_metadata', response_payload_size: 10 } });
    expect(await pollFuture(http, 'r1', 'OptimStep')).toEqual({ json: { metrics: { grad_norm: 2 } } });
    expect(waits).toEqual([250, 1000, 2000, 4000]);
    const polls = fake.sent('POST retrieve_future');
    expect(polls).toHaveLength(7);
    expect(polls[6].json.allow_metadata_only).toBe(false);
  });

  it('polls three more times after a 400 without an error body, then fails; a 400 with one fails at once', async () => {
    const { fake, http } = setup();
    fake.script('POST retrieve_future', { status: 400 }, { status: 400 }, { status: 400 }, { status: 400 });
    expect(await errorOf(pollFuture(http, 'r1', 'OptimStep'))).toMatchObject({ status: 400 });
    expect(fake.sent('POST retrieve_future')).toHaveLength(4);
    fake.script('POST retrieve_future', { status: 400, json: { code: 'OT_ERR_VALIDATION', message: 'request_id is required', field: 'request_id' } });
    expect(await errorOf(pollFuture(http, 'r1', 'OptimStep'))).toMatchObject({ code: 'OT_ERR_VALIDATION', category: 'user' });
    expect(fake.sent('POST retrieve_future')).toHaveLength(5);
  });

  it('fails with the server’s error on 404, and with FutureGoneError on 410', async () => {
    const { fake, http } = setup();
    expect(await errorOf(pollFuture(http, 'nope', 'OptimStep'))).toMatchObject({ code: 'OT_ERR_NOT_FOUND', status: 404, category: 'user', requestId: 'nope' });
    fake.script('POST retrieve_future', { status: 410, json: { code: 'OT_ERR_GONE', message: 'the runner ended' } });
    const gone = await errorOf(pollFuture(http, 'r1', 'Sample'));
    expect(gone).toBeInstanceOf(FutureGoneError);
    expect(gone).toMatchObject({ code: 'OT_ERR_GONE', status: 410 });
  });

  it('stops polling when the signal aborts', async () => {
    const { fake, http } = setup();
    fake.tryAgains = 1_000_000;
    const controller = new AbortController();
    fake.script('POST retrieve_future', { json: { type: 'try_again', request_id: 'r1', queue_state: 'active' } });
    const pending = pollFuture(http, 'r1', 'OptimStep', { signal: controller.signal, onQueueState: () => controller.abort(new Error('enough')) });
    await expect(pending).rejects.toThrow('enough');
  });
});

describe('detached', () => {
  it('keeps a rejection from being unhandled while still rejecting for whoever awaits it', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const p = detached(Promise.reject(new Error('refused')));
      await new Promise((r) => setTimeout(r, 10));
      expect(unhandled).toEqual([]);
      await expect(p).rejects.toThrow('refused');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
