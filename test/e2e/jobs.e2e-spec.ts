import { parseSse, startTestApp, TestApp, waitForState } from '../support/test-app';

describe('jobs API', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    t = await startTestApp();
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  });
  afterAll(() => t.close());

  const submit = (body: unknown, key = alice) => t.request('POST', '/v1/jobs', { key, body });

  it('runs a job through queued, starting, running and succeeded, with logs, metrics, artifacts and events', async () => {
    const created = await submit({ kind: 'sleep', name: 'demo', steps: 3, step_seconds: 0.05 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'sleep', name: 'demo', state: 'queued', attempts: 0 });
    expect(created.body.spec).toEqual({
      kind: 'sleep',
      name: 'demo',
      priority: 0,
      resources: { gpus: 0, cpu_slots: 1 },
      max_attempts: 3,
      steps: 3,
      step_seconds: 0.05,
      message: 'tick',
    });
    const id = created.body.id;
    const done = await waitForState(t, id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    expect(done.exit_code).toBe(0);
    expect(done.devices).toEqual(['cpu:0']);
    expect(done.progress).toEqual({ step: 3, total: 3, message: 'tick' });
    expect(Date.parse(done.started_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    expect(Date.parse(done.finished_at)).toBeGreaterThanOrEqual(Date.parse(done.started_at));

    const sse = await t.request('GET', `/v1/jobs/${id}/events`, { key: alice });
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toContain('text/event-stream');
    const events = parseSse(sse.text);
    const states = events.filter((e) => e.event === 'state').map((e) => e.data.state);
    expect(states).toEqual(['queued', 'starting', 'running', 'succeeded']);
    expect(events.filter((e) => e.event === 'progress')).toHaveLength(3);
    const points = events.filter((e) => e.event === 'metrics').flatMap((e) => e.data.points);
    expect(points.filter((p: any) => p.name === 'step_fraction').map((p: any) => p.value)).toEqual([1 / 3, 2 / 3, 1]);
    expect(events.some((e) => e.event === 'artifact' && e.data.name === 'result.json')).toBe(true);
    expect(events[events.length - 1]).toMatchObject({ event: 'end', data: { state: 'succeeded' } });
    const ids = events.filter((e) => e.id).map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);

    const resumed = parseSse((await t.request('GET', `/v1/jobs/${id}/events`, { key: alice, headers: { 'last-event-id': String(ids[ids.length - 2]) } })).text);
    expect(resumed.map((e) => e.event)).toEqual([events[events.length - 2].event, 'end']);

    const logs = await t.request('GET', `/v1/jobs/${id}/logs`, { key: alice });
    expect(logs.status).toBe(200);
    expect(logs.text).toContain('step 1/3: tick');
    expect(logs.text).toContain('done');
    expect((await t.request('GET', `/v1/jobs/${id}/logs?tail=1`, { key: alice })).text).toBe('done\n');

    const metrics = await t.request('GET', `/v1/jobs/${id}/metrics?name=step_fraction`, { key: alice });
    expect(metrics.body.map((m: any) => [m.step, m.value])).toEqual([
      [1, 1 / 3],
      [2, 2 / 3],
      [3, 1],
    ]);
    expect((await t.request('GET', `/v1/jobs/${id}/metrics?name=step_fraction&after_step=2`, { key: alice })).body).toHaveLength(1);

    const artifacts = await t.request('GET', `/v1/jobs/${id}/artifacts`, { key: alice });
    expect(artifacts.body).toEqual([expect.objectContaining({ name: 'result.json' })]);
    const file = await t.request('GET', `/v1/jobs/${id}/artifacts/result.json`, { key: alice });
    expect(file.status).toBe(200);
    expect(JSON.parse(file.text)).toMatchObject({ steps: 3, resumed_from: 0 });
    expect((await t.request('GET', `/v1/jobs/${id}/artifacts/nope.bin`, { key: alice })).body.code).toBe('OT_ERR_NOT_FOUND');
  });

  it('records a failing job with its error', async () => {
    const { body } = await submit({ kind: 'sleep', steps: 5, step_seconds: 0, fail_at_step: 2 });
    const done = await waitForState(t, body.id, ['succeeded', 'failed']);
    expect(done.state).toBe('failed');
    expect(done.exit_code).toBe(1);
    expect(done.error).toContain('failing at step 2');
    expect((await t.request('GET', `/v1/jobs/${body.id}/logs`, { key: alice })).text).toContain('failing at step 2');
  });

  it('cancels a queued job at once and a running job by stopping its runner', async () => {
    const running = await submit({ kind: 'sleep', steps: 100, step_seconds: 0.2 });
    await waitForState(t, running.body.id, ['running']);
    const cancel = await t.request('POST', `/v1/jobs/${running.body.id}/cancel`, { key: alice });
    expect(cancel.status).toBe(202);
    expect(cancel.body.cancel_requested).toBe(true);
    const ended = await waitForState(t, running.body.id, ['cancelled', 'failed', 'succeeded']);
    expect(ended.state).toBe('cancelled');
    expect(ended.progress.step).toBeLessThan(100);

    const again = await t.request('POST', `/v1/jobs/${running.body.id}/cancel`, { key: alice });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('OT_ERR_JOB_NOT_CANCELLABLE');
  });

  it('keeps users apart: another user’s job is not found; admins see everything', async () => {
    const { body } = await submit({ kind: 'sleep', steps: 1, step_seconds: 0 }, alice);
    for (const [method, url] of [
      ['GET', `/v1/jobs/${body.id}`],
      ['POST', `/v1/jobs/${body.id}/cancel`],
      ['GET', `/v1/jobs/${body.id}/logs`],
      ['GET', `/v1/jobs/${body.id}/events`],
      ['GET', `/v1/jobs/${body.id}/metrics`],
      ['GET', `/v1/jobs/${body.id}/artifacts`],
      ['GET', `/v1/jobs/${body.id}/results`],
      ['GET', `/v1/jobs/${body.id}/checkpoints`],
      ['GET', `/v1/jobs/${body.id}/calls`],
    ]) {
      const res = await t.request(method, url, { key: bob });
      expect([url, res.status, res.body.code]).toEqual([url, 404, 'OT_ERR_NOT_FOUND']);
    }
    const bobs = await t.request('GET', '/v1/jobs', { key: bob });
    expect(bobs.body.items.map((j: any) => j.id)).not.toContain(body.id);
    const admins = await t.request('GET', '/v1/jobs?limit=200');
    expect(admins.body.items.map((j: any) => j.id)).toContain(body.id);
    expect((await t.request('GET', `/v1/jobs/${body.id}`)).status).toBe(200);
    await waitForState(t, body.id, ['succeeded']);
    // An artifact that exists is as invisible to another user as one that does not.
    const artifact = `/v1/jobs/${body.id}/artifacts/result.json`;
    expect((await t.request('GET', artifact, { key: alice })).status).toBe(200);
    const foreign = await t.request('GET', artifact, { key: bob });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'OT_ERR_NOT_FOUND']);
  });

  it('pages and filters the list', async () => {
    const carol = (await t.request('POST', '/v1/users', { body: { name: 'carol' } })).body.api_key.key;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await submit({ kind: 'sleep', steps: 1, step_seconds: 0, name: `p${i}` }, carol)).body.id);
    // Listed while unfinished, so the list keeps their JSON from before the jobs changed.
    const early = await t.request('GET', '/v1/jobs?limit=2&page=1', { key: carol });
    expect(early.body.items.map((j: any) => j.name)).toEqual(['p4', 'p3']);
    for (const id of ids) await waitForState(t, id, ['succeeded']);
    const page1 = await t.request('GET', '/v1/jobs?limit=2&page=1', { key: carol });
    expect(page1.headers['content-type']).toBe('application/json; charset=utf-8');
    const page3 = await t.request('GET', '/v1/jobs?limit=2&page=3', { key: carol });
    expect(page1.body).toMatchObject({ page: 1, limit: 2, total: 5 });
    expect(page1.body.items.map((j: any) => j.name)).toEqual(['p4', 'p3']);
    expect(page3.body.items.map((j: any) => j.name)).toEqual(['p0']);
    // Items are summaries: the job as GET /v1/jobs/:id answers it, without the spec.
    const { spec, ...summary } = (await t.request('GET', `/v1/jobs/${ids[4]}`, { key: carol })).body;
    expect(spec).toMatchObject({ kind: 'sleep', name: 'p4', steps: 1 });
    expect(summary).toMatchObject({ environment: null, resources: { gpus: 0, cpu_slots: 1 } });
    expect(page1.body.items[0]).toEqual(summary);
    expect(page1.body.items.map((j: any) => j.state)).toEqual(['succeeded', 'succeeded']);
    expect((await t.request('GET', '/v1/jobs?state=failed,cancelled', { key: carol })).body.total).toBe(0);
    expect((await t.request('GET', '/v1/jobs?state=succeeded&kind=sleep', { key: carol })).body.total).toBe(5);
  });

  describe('bad input', () => {
    it.each([
      [{ kind: 'sleep', stepz: 3 }, 'stepz', 'Unknown field stepz'],
      [{ kind: 'sleep', resources: { gpus: 1, tpus: 2 } }, 'resources.tpus', 'Unknown field resources.tpus'],
      [{ kind: 'sleep', steps: 'ten' }, 'steps', 'steps'],
      [{ kind: 'sleep', steps: 0 }, 'steps', 'steps'],
      [{ kind: 'sleep', priority: 1000 }, 'priority', 'priority'],
      [{ kind: 'nope' }, 'kind', 'Unknown job kind nope'],
      [{ steps: 3 }, 'kind', 'kind is required'],
    ])('refuses %j naming %s', async (body, field, message) => {
      const res = await submit(body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, code: 'OT_ERR_VALIDATION', field });
      expect(res.body.message).toContain(message);
    });

    it('refuses a body that is not an object', async () => {
      for (const body of ['[1,2]', '"text"', '42']) {
        const res = await submit(body);
        expect([res.status, res.body.code]).toEqual([400, 'OT_ERR_VALIDATION']);
      }
    });

    it('refuses malformed JSON, oversize bodies and other media types with stable codes', async () => {
      const bad = await submit('{"kind":');
      expect([bad.status, bad.body.code]).toEqual([400, 'OT_ERR_BAD_JSON']);
      const big = await submit({ kind: 'sleep', message: 'x'.repeat(2 * 1024 * 1024) });
      expect([big.status, big.body.code]).toEqual([413, 'OT_ERR_BODY_TOO_LARGE']);
      const xml = await t.request('POST', '/v1/jobs', { key: alice, body: '<job/>', headers: { 'content-type': 'application/xml' } });
      expect([xml.status, xml.body.code]).toEqual([415, 'OT_ERR_UNSUPPORTED_MEDIA_TYPE']);
    });

    it('answers unknown and malformed ids and bad queries with 4xx codes', async () => {
      const unknown = await t.request('GET', '/v1/jobs/3f1e0c1e-0000-4000-8000-000000000000', { key: alice });
      expect([unknown.status, unknown.body.code]).toEqual([404, 'OT_ERR_NOT_FOUND']);
      const malformed = await t.request('GET', '/v1/jobs/not-a-uuid', { key: alice });
      expect([malformed.status, malformed.body.code]).toEqual([400, 'OT_ERR_VALIDATION']);
      const badState = await t.request('GET', '/v1/jobs?state=sleeping', { key: alice });
      expect([badState.status, badState.body.code, badState.body.field]).toEqual([400, 'OT_ERR_VALIDATION', 'state']);
      const badLimit = await t.request('GET', '/v1/jobs?limit=100000', { key: alice });
      expect([badLimit.status, badLimit.body.field]).toEqual([400, 'limit']);
      const extra = await t.request('GET', '/v1/jobs?color=red', { key: alice });
      expect([extra.status, extra.body.field]).toEqual([400, 'color']);
      const route = await t.request('GET', '/v1/nothing-here', { key: alice });
      expect([route.status, route.body.code]).toEqual([404, 'OT_ERR_ROUTE_NOT_FOUND']);
    });
  });
});
