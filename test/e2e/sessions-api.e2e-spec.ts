import { startTestApp, TestApp } from '../support/test-app';

/** The session call API without a worker: recording, idempotency, validation, closing. */
describe('session calls API', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    t = await startTestApp({ worker: false });
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  });
  afterAll(() => t.close());

  const session = { kind: 'session', environment: { id: 'math' }, model: { preset: 'tiny-test' } };
  const call = (id: string, body: unknown, key = alice, wait = 0) => t.request('POST', `/v1/jobs/${id}/calls?wait_seconds=${wait}`, { key, body });

  it('records a call once per call_id and answers 202 while no worker has taken it', async () => {
    const job = await t.request('POST', '/v1/jobs', { key: alice, body: session });
    expect(job.status).toBe(201);
    expect(job.body.spec).toMatchObject({ idle_timeout_seconds: 600, batch_size: 16, max_attempts: 1 });
    expect(job.body.environment).toBe('math');
    const id = job.body.id;
    const summary = (await t.request('GET', '/v1/jobs', { key: alice })).body.items.find((j: any) => j.id === id);
    expect(summary).toMatchObject({ kind: 'session', environment: 'math' });
    expect(summary).not.toHaveProperty('spec');

    const first = await call(id, { call_id: 'step-1', op: 'train_step', args: { batch_size: 4 } });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ call_id: 'step-1', op: 'train_step', args: { batch_size: 4 }, state: 'pending', result: null, error: null });

    const retry = await call(id, { call_id: 'step-1', op: 'train_step', args: { batch_size: 4 } });
    expect(retry.status).toBe(202);
    expect(retry.body.created_at).toBe(first.body.created_at);
    const listed = await t.request('GET', `/v1/jobs/${id}/calls`, { key: alice });
    expect(listed.body.map((c: any) => c.call_id)).toEqual(['step-1']);

    const reused = await call(id, { call_id: 'step-1', op: 'train_step', args: { batch_size: 5 } });
    expect(reused.status).toBe(409);
    expect(reused.body).toMatchObject({ code: 'OT_ERR_CALL_CONFLICT', field: 'call_id' });

    expect((await t.request('GET', `/v1/jobs/${id}/calls/step-1?wait_seconds=0`, { key: alice })).status).toBe(202);
    expect((await t.request('GET', `/v1/jobs/${id}/calls/nope?wait_seconds=0`, { key: alice })).body).toMatchObject({ code: 'OT_ERR_NOT_FOUND', field: 'call_id' });

    // Cancelled before any worker ran it: its open calls fail instead of waiting forever, and new ones are refused.
    expect((await t.request('POST', `/v1/jobs/${id}/cancel`, { key: alice })).status).toBe(202);
    const after = await t.request('GET', `/v1/jobs/${id}/calls/step-1?wait_seconds=1`, { key: alice });
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ state: 'failed', error: 'The session was cancelled before answering this call' });
    const late = await call(id, { call_id: 'step-2', op: 'validate' });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('OT_ERR_SESSION_CLOSED');
  });

  it('refuses bad calls with the offending field', async () => {
    const id = (await t.request('POST', '/v1/jobs', { key: alice, body: session })).body.id;
    const cases: [unknown, string][] = [
      [{ call_id: 'a', op: 'train_step', args: { batch_size: 0 } }, 'args.batch_size'],
      [{ call_id: 'a', op: 'train_step', args: { tasks: [{}], indices: [1] } }, 'args.indices'],
      [{ call_id: 'a', op: 'train_step', args: { epochs: 2 } }, 'args.epochs'],
      [{ call_id: 'a', op: 'sample', args: {} }, 'args.messages'],
      [{ call_id: 'a', op: 'sample', args: { messages: [{ role: 'robot', content: 'x' }] } }, 'args.messages.0.role'],
      [{ call_id: 'a', op: 'dance' }, 'op'],
      [{ call_id: 'a b', op: 'close' }, 'call_id'],
      [{ op: 'close' }, 'call_id'],
    ];
    for (const [body, field] of cases) {
      const res = await call(id, body);
      expect({ body, status: res.status, code: res.body.code, field: res.body.field }).toEqual({ body, status: 400, code: 'OT_ERR_VALIDATION', field });
    }
    await t.request('POST', `/v1/jobs/${id}/cancel`, { key: alice });
  });

  it('hides other users’ sessions and refuses calls to jobs that are not sessions', async () => {
    const id = (await t.request('POST', '/v1/jobs', { key: alice, body: session })).body.id;
    const res = await call(id, { call_id: 'x', op: 'close' }, bob);
    expect(res.status).toBe(404);
    expect((await t.request('GET', `/v1/jobs/${id}/calls`, { key: bob })).status).toBe(404);
    await t.request('POST', `/v1/jobs/${id}/cancel`, { key: alice });

    const sleeper = (await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', steps: 1 } })).body.id;
    const wrong = await call(sleeper, { call_id: 'x', op: 'close' });
    expect(wrong.status).toBe(409);
    expect(wrong.body).toMatchObject({ code: 'OT_ERR_NOT_A_SESSION', field: 'id' });
  });
});
