import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from '../../src/openapi';
import { startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';

describe('health, metrics, devices and the OpenAPI contract', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ config: { cpu_slots: 2 } });
  });
  afterAll(() => t.close());

  it('answers liveness and readiness without a key', async () => {
    expect(await t.request('GET', '/health', { key: null })).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await waitFor(async () => {
      const res = await t.request('GET', '/health/ready', { key: null });
      return res.status === 200 ? res : undefined;
    });
    expect(ready.body).toMatchObject({ status: 'ok', database: { ok: true }, queue: { ok: true }, workers: { ok: true } });
  });

  it('reports not ready when no worker is alive', async () => {
    const apiOnly = await startTestApp({ worker: false });
    try {
      const res = await apiOnly.request('GET', '/health/ready', { key: null });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ status: 'unavailable', database: { ok: true }, workers: { ok: false, detail: 'no live worker' } });
    } finally {
      await apiOnly.close();
    }
  });

  it('lists the worker’s devices and which job holds them', async () => {
    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 50, step_seconds: 0.1, resources: { cpu_slots: 2 } } })).body;
    await waitForState(t, job.id, ['running']);
    const res = await t.request('GET', '/v1/devices');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(res.body[0].devices).toEqual([
      { id: 'cpu:0', kind: 'cpu', name: 'CPU slot', memory_mb: null, job_id: job.id, busy: true, held_by: 'job' },
      { id: 'cpu:1', kind: 'cpu', name: 'CPU slot', memory_mb: null, job_id: job.id, busy: true, held_by: 'job' },
    ]);
    await t.request('POST', `/v1/jobs/${job.id}/cancel`);
    await waitForState(t, job.id, ['cancelled']);
    const freed = await t.request('GET', '/v1/devices');
    expect(freed.body[0].devices.map((d: any) => d.job_id)).toEqual([null, null]);
  });

  it('exposes Prometheus metrics: jobs by state, queue depth, request latency', async () => {
    await t.request('GET', '/v1/jobs');
    const res = await t.request('GET', '/metrics', { key: null });
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/opentinker_jobs\{state="cancelled"\} 1/);
    expect(res.text).toMatch(/opentinker_jobs\{state="queued"\} 0/);
    expect(res.text).toMatch(/opentinker_queue_depth 0/);
    expect(res.text).toMatch(/opentinker_workers_alive 1/);
    expect(res.text).toMatch(/opentinker_http_request_duration_seconds_count\{method="GET",route="\/v1\/jobs",status="200"\} \d+/);
  });

  it('serves Swagger UI and an OpenAPI document equal to the committed openapi.json', async () => {
    const docs = await t.request('GET', '/docs', { key: null });
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('swagger');
    const served = await t.request('GET', '/openapi.json', { key: null });
    expect(served.status).toBe(200);
    const generated = buildOpenApiDocument(t.app);
    const committed = JSON.parse(readFileSync(join(process.cwd(), 'openapi.json'), 'utf8'));
    // If this fails, the API changed: run `npm run openapi` and commit openapi.json.
    expect(generated).toEqual(committed);
    expect(served.body.paths).toEqual(committed.paths);

    const operations = Object.entries(committed.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method, op })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(17);
    for (const { path, op } of operations) {
      expect([path, typeof op.summary]).toEqual([path, 'string']);
      if (path.startsWith('/v1/')) expect([path, Object.keys(op.responses)]).toEqual([path, expect.arrayContaining(['401'])]);
    }
    expect(committed.components.schemas.JobSpec_sleep.properties.steps).toMatchObject({ type: 'integer', default: 10 });
  });
});
