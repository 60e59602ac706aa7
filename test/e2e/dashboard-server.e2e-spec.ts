import { buildOpenApiDocument } from '../../src/openapi';
import { ApiError, createApi } from '../../src/dashboard/public/api.mjs';
import { followEventStream, type StreamEvent } from '../../src/dashboard/public/event-stream.mjs';
import { jobOutputs, loadJobKinds } from '../../src/dashboard/public/job-kinds.mjs';
import { parseSse, startTestApp, TestApp, waitForState } from '../support/test-app';

/** The server side of the dashboard, and its API and event-stream modules run in Node against a real port. */
describe('dashboard: static files, and the page’s API client against the server', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = await t.app.getUrl();
  });
  afterAll(() => t.close());

  it('serves the page without a key, with a CSP that allows only this server', async () => {
    const res = await t.request('GET', '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<script type="module" src="/assets/main.mjs"></script>');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(res.headers['content-security-policy']).not.toContain('unsafe');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    // a key sent anyway changes nothing (the page is public)
    expect((await t.request('GET', '/', { key: 'otk_not_a_real_key_000000000000' })).status).toBe(200);
  });

  it('serves the modules, styles and uPlot from this server, revalidated with ETags', async () => {
    const main = await t.request('GET', '/assets/main.mjs', { key: null });
    expect(main.status).toBe(200);
    expect(main.headers['content-type']).toMatch(/javascript/);
    expect(main.headers['cache-control']).toBe('no-cache');
    const again = await t.request('GET', '/assets/main.mjs', { key: null, headers: { 'if-none-match': String(main.headers.etag) } });
    expect(again.status).toBe(304);

    const uplot = await t.request('GET', '/assets/uplot.esm.js', { key: null });
    expect(uplot.status).toBe(200);
    expect(uplot.text).toContain('export { uPlot as default }');
    expect((await t.request('GET', '/assets/uplot.min.css', { key: null })).headers['content-type']).toMatch(/^text\/css/);
    expect((await t.request('GET', '/assets/dashboard.css', { key: null })).status).toBe(200);
    // The client's SSE parser, as the browser build the dashboard's event-stream module imports.
    const parser = await t.request('GET', '/assets/sse-parser.mjs', { key: null });
    expect(parser.status).toBe(200);
    expect(parser.headers['content-type']).toMatch(/javascript/);
    expect(parser.text).toContain('export class SseParser');
  });

  it.each(['nope.mjs', 'api.d.mts', 'index.html', '..%2Fdashboard.module.ts', '..%2F..%2F..%2Fpackage.json', '%2Fetc%2Fpasswd', 'uPlot.cjs.js'])(
    'answers 404 for /assets/%s',
    async (name) => {
      const res = await t.request('GET', `/assets/${name}`, { key: null });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'OT_ERR_ROUTE_NOT_FOUND' });
    },
  );

  it('keeps the dashboard out of the OpenAPI document and the API behind keys', async () => {
    const paths = Object.keys(buildOpenApiDocument(t.app).paths);
    expect(paths.filter((p) => p === '/' || p.startsWith('/assets'))).toEqual([]);
    expect((await t.request('GET', '/v1/jobs', { key: null })).status).toBe(401);
  });

  it('maps API errors to their stable codes (wrong key, unknown job, unreachable server)', async () => {
    const wrong = createApi({ key: 'otk_wrong_key_for_the_dashboard_00', baseUrl: base });
    await expect(wrong.get('/v1/users/me')).rejects.toMatchObject({ status: 401, code: 'OT_ERR_UNAUTHENTICATED', field: 'authorization' });
    const api = createApi({ key: t.adminKey, baseUrl: base });
    expect(await api.get('/v1/users/me')).toMatchObject({ name: 'admin', role: 'admin' });
    const missing = api.get('/v1/jobs/00000000-0000-4000-8000-000000000000');
    await expect(missing).rejects.toBeInstanceOf(ApiError);
    await expect(missing).rejects.toMatchObject({ status: 404, code: 'OT_ERR_NOT_FOUND' });
    const down = createApi({ key: t.adminKey, baseUrl: 'http://127.0.0.1:9' });
    await expect(down.get('/v1/users/me')).rejects.toMatchObject({ status: 0, code: 'NETWORK' });
  });

  it('picks a job page’s sections from the capabilities the server reports for its kind (GET /v1/job-kinds)', async () => {
    const api = createApi({ key: t.adminKey, baseUrl: base });
    const kinds = await loadJobKinds(api);
    expect(kinds.map((k) => k.kind)).toEqual(['sleep', 'train', 'inference', 'session', 'tinker']);
    expect(kinds.find((k) => k.kind === 'inference')).toEqual({
      kind: 'inference',
      description: expect.any(String),
      resumable: false,
      checkpoints: false,
      trains: false,
      calls: false,
      results: 'results.jsonl',
    });
    const sections = Object.fromEntries(kinds.map((k) => [k.kind, jobOutputs(kinds, k.kind)]));
    expect(sections).toEqual({
      sleep: { results: false, resultsFile: null, checkpoints: false },
      train: { results: false, resultsFile: null, checkpoints: true },
      inference: { results: true, resultsFile: 'results.jsonl', checkpoints: false },
      session: { results: false, resultsFile: null, checkpoints: true },
      tinker: { results: false, resultsFile: null, checkpoints: true },
    });
    // Asked once per signed-in client.
    expect(loadJobKinds(api)).toBe(loadJobKinds(api));
    expect((await t.request('GET', '/v1/job-kinds', { key: null })).status).toBe(401);
  });

  it('follows a job’s events to the end, resuming after a dropped connection with Last-Event-ID', async () => {
    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 6, step_seconds: 0.05 } })).body;
    const requests: (string | null)[] = [];
    // The first connection is cut after three whole events, as a proxy or a network change would.
    const flaky: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      requests.push(headers.get('last-event-id'));
      const res = await fetch(input, init);
      if (requests.length > 1) return res;
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      let received = '';
      let forwarded = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          received += decoder.decode(value, { stream: true });
          const frames = received.split('\n\n');
          if (frames.length > 3) {
            const cut = frames.slice(0, 3).join('\n\n').length + 2;
            controller.enqueue(encoder.encode(received.slice(forwarded, cut)));
            await reader.cancel();
            controller.error(new TypeError('network connection lost'));
          } else {
            controller.enqueue(encoder.encode(received.slice(forwarded)));
            forwarded = received.length;
          }
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const events: StreamEvent[] = [];
    const statuses: string[] = [];
    const result = await followEventStream(`${base}/v1/jobs/${job.id}/events`, {
      headers: { authorization: `Bearer ${t.adminKey}` },
      fetch: flaky,
      retryMs: 10,
      onEvent: (e) => events.push(e),
      onStatus: (s) => statuses.push(s),
    });

    expect(result.ended).toBe(true);
    expect(requests).toHaveLength(2);
    expect(requests[0]).toBeNull();
    expect(requests[1]).toBe(events[2].id);
    expect(statuses).toEqual(['connecting', 'live', 'reconnecting', 'live', 'ended']);
    // Exactly the server's events, each once, in order, then `end`.
    await waitForState(t, job.id, ['succeeded']);
    const all = parseSse((await t.request('GET', `/v1/jobs/${job.id}/events`)).text);
    expect(events.map((e) => [e.id, e.event])).toEqual(all.map((e) => [e.id, e.event]));
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { state: 'succeeded' } });
    const steps = events.filter((e) => e.event === 'metrics').flatMap((e) => e.data.points.filter((p: any) => p.name === 'step_fraction'));
    expect(steps.map((p: any) => p.step)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('gives up at once on errors a retry cannot fix, and stops when aborted', async () => {
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    await expect(
      followEventStream(`${base}/v1/jobs/00000000-0000-4000-8000-000000000000/events`, {
        headers: { authorization: `Bearer ${t.adminKey}` },
        fetch: counting,
      }),
    ).rejects.toMatchObject({ status: 404, code: 'OT_ERR_NOT_FOUND' });
    expect(calls).toBe(1);

    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 100, step_seconds: 0.2 } })).body;
    const abort = new AbortController();
    const seen: string[] = [];
    const result = await followEventStream(`${base}/v1/jobs/${job.id}/events`, {
      headers: { authorization: `Bearer ${t.adminKey}` },
      signal: abort.signal,
      onEvent: (e) => {
        seen.push(e.event);
        if (e.event === 'metrics') abort.abort();
      },
    });
    expect(result).toMatchObject({ ended: false });
    expect(seen).toContain('metrics');
    expect(seen).not.toContain('end');
    await t.request('POST', `/v1/jobs/${job.id}/cancel`);
    await waitForState(t, job.id, ['cancelled']);
  });
});
