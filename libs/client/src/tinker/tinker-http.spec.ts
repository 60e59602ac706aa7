import { FakeTinkerServer, recordedSleep } from '../testing/fake-tinker-server';
import { OpenTinkerError } from '../errors';
import { TinkerHttp } from './tinker-http';

function setup(options: { maxRetries?: number } = {}) {
  const fake = new FakeTinkerServer();
  const { waits, sleep } = recordedSleep();
  const http = new TinkerHttp({ baseUrl: 'http://tinker.test/', apiKey: 'tml-otk_key', fetch: fake.fetch, ...options }, sleep, () => 0);
  return { fake, waits, http };
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

describe('TinkerHttp', () => {
  it('sends the key, JSON bodies under /api/v1, and an idempotency key on every non-GET', async () => {
    const { fake, http } = setup();
    expect(await http.json('POST', 'create_session', { tags: [] })).toEqual({ session_id: 'sess', type: 'create_session' });
    await http.json('GET', 'get_server_capabilities');
    const [post, get] = fake.seen;
    expect(post).toMatchObject({ method: 'POST', path: 'create_session', json: { tags: [] } });
    expect(post.headers).toMatchObject({
      authorization: 'Bearer tml-otk_key',
      'content-type': 'application/json',
      'x-idempotency-key': expect.stringMatching(/^opentinker-client-retry-/),
    });
    expect(get.headers['x-idempotency-key']).toBeUndefined();
  });

  it('retries connection failures, 408, 409, 429, 5xx and a 400 without a body, with the same idempotency key, backing off as the SDK does', async () => {
    const { fake, waits, http } = setup();
    fake.script('POST create_session', 'down', { status: 408 }, { status: 409 }, { status: 429, headers: { 'retry-after': '2' } }, { status: 503 }, { status: 400 });
    expect(await http.json('POST', 'create_session', { tags: [] })).toMatchObject({ session_id: 'sess' });
    const sent = fake.sent('POST create_session');
    expect(sent).toHaveLength(7);
    expect(new Set(sent.map((s) => s.headers['x-idempotency-key'])).size).toBe(1);
    // 0.5 s doubling (no jitter with random() = 0), Retry-After where the server said.
    expect(waits).toEqual([500, 1000, 2000, 2000, 8000, 10000]);
  });

  it('does not retry a 4xx with an error body, nor an answer that says x-should-retry: false, and gives up after maxRetries', async () => {
    const { fake, http } = setup({ maxRetries: 2 });
    fake.script('POST optim_step', { status: 400, json: { code: 'OT_ERR_VALIDATION', message: 'learning_rate must be at least 0', field: 'adam_params.learning_rate' } });
    const refused = await errorOf(http.json('POST', 'optim_step', {}));
    expect(refused).toMatchObject({ code: 'OT_ERR_VALIDATION', status: 400, field: 'adam_params.learning_rate', category: 'user' });
    fake.script('POST get_info', { status: 503, headers: { 'x-should-retry': 'false' } });
    expect(await errorOf(http.json('POST', 'get_info', {}))).toMatchObject({ status: 503, category: 'server' });
    fake.script('POST create_session', 'down', 'down', 'down');
    expect(await errorOf(http.json('POST', 'create_session', {}))).toMatchObject({ code: 'OT_ERR_CONNECTION', status: 0, category: 'server' });
    expect(fake.sent('POST optim_step')).toHaveLength(1);
    expect(fake.sent('POST get_info')).toHaveLength(1);
    expect(fake.sent('POST create_session')).toHaveLength(3);
  });

  it('rejects with the signal’s reason once aborted, without retrying', async () => {
    const { fake, http } = setup();
    fake.script('POST create_session', 'down');
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(http.json('POST', 'create_session', {}, { signal: controller.signal })).rejects.toThrow('stop');
  });

  it('says an answer that is not JSON is a bad response', async () => {
    const { fake, http } = setup();
    fake.script('POST get_info', new Response('<html>proxy</html>', { status: 200 }));
    expect(await errorOf(http.json('POST', 'get_info', {}))).toMatchObject({ code: 'OT_ERR_BAD_RESPONSE', category: 'server' });
  });
});
