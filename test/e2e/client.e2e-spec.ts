import { FetchLike, isOpenTinkerError, JobEvent, OpenTinkerClient, OpenTinkerError } from '@opentinker/client';
import { createServer, Server, Socket } from 'node:net';
import { parseSse, startTestApp, TestApp, waitForState } from '../support/test-app';

/**
 * `@opentinker/client` against a real server on a real port: typed calls, the server's errors mapped
 * to OpenTinkerError, retries only where idempotent, and an event stream that survives a dropped
 * connection without losing or repeating an event.
 */
describe('@opentinker/client', () => {
  let t: TestApp;
  let baseUrl: string;
  let admin: OpenTinkerClient;
  let alice: OpenTinkerClient;
  let aliceKey: string;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = await t.app.getUrl();
    admin = new OpenTinkerClient({ baseUrl, apiKey: t.adminKey });
    const created = await admin.users.create({ name: 'alice' });
    aliceKey = created.api_key.key;
    alice = new OpenTinkerClient({ baseUrl: `${baseUrl}/`, apiKey: aliceKey });
  });
  afterAll(() => t.close());

  it('manages users and keys', async () => {
    expect(await alice.users.me()).toMatchObject({ name: 'alice', role: 'user' });
    expect((await admin.users.list()).map((u) => u.name)).toEqual(expect.arrayContaining(['admin', 'alice']));
    const issued = await alice.keys.create({ name: 'laptop' });
    expect(issued.key).toMatch(/^otk_/);
    const laptop = new OpenTinkerClient({ baseUrl, apiKey: issued.key });
    expect((await laptop.users.me()).name).toBe('alice');
    expect((await alice.keys.list()).map((k) => k.name)).toEqual(expect.arrayContaining(['laptop']));
    expect((await alice.keys.revoke(issued.id)).revoked_at).not.toBeNull();
    await expect(laptop.users.me()).rejects.toMatchObject({ code: 'OT_ERR_UNAUTHENTICATED', status: 401 });
  });

  it('runs a job and reads everything it produced', async () => {
    const job = await alice.jobs.submit({ kind: 'sleep', name: 'demo', steps: 3, step_seconds: 0.02 });
    expect(job).toMatchObject({ kind: 'sleep', name: 'demo', state: 'queued', spec: { steps: 3, message: 'tick' } });
    const seen: JobEvent['type'][] = [];
    const done = await alice.waitForJob(job.id, { onEvent: (e) => seen.push(e.type) });
    expect(done).toMatchObject({ id: job.id, state: 'succeeded', progress: { step: 3, total: 3 } });
    expect(seen).toEqual(expect.arrayContaining(['state', 'progress', 'metrics', 'log', 'artifact']));
    expect(seen[seen.length - 1]).toBe('end');

    expect(await alice.jobs.logs(job.id)).toContain('tick');
    expect((await alice.jobs.logs(job.id, { tail: 1 })).trim().split('\n')).toHaveLength(1);
    const metrics = await alice.jobs.metrics(job.id);
    expect(metrics.length).toBeGreaterThanOrEqual(3);
    expect(metrics.every((p) => typeof p.value === 'number' && typeof p.name === 'string')).toBe(true);
    const after = await alice.jobs.metrics(job.id, { after_step: 2 });
    expect(after.every((p) => p.step > 2)).toBe(true);

    const artifacts = await alice.jobs.artifacts(job.id);
    expect(artifacts.map((a) => a.name)).toContain('result.json');
    const bytes = await alice.jobs.readArtifact(job.id, 'result.json');
    expect(bytes.byteLength).toBe(artifacts.find((a) => a.name === 'result.json')!.size);
    expect(JSON.parse(new TextDecoder().decode(bytes))).toBeTruthy();

    const page = await alice.jobs.list({ state: ['succeeded', 'failed'], limit: 5 });
    expect(page.items.map((j) => j.id)).toContain(job.id);
    // Listed as a summary: the spec comes with jobs.get.
    const listed = page.items.find((j) => j.id === job.id)!;
    expect(listed).toMatchObject({ kind: 'sleep', name: 'demo', state: 'succeeded', environment: null });
    expect(listed).not.toHaveProperty('spec');
    expect((await alice.jobs.get(job.id)).spec).toMatchObject({ steps: 3, message: 'tick' });
    expect((await alice.jobs.list({ state: ['queued'] })).items.map((j) => j.id)).not.toContain(job.id);
    // The kinds the server runs, with what their jobs can do.
    const kinds = await alice.jobs.kinds();
    expect(kinds.find((k) => k.kind === 'sleep')).toMatchObject({ resumable: true, checkpoints: false, results: null });
    expect(kinds.filter((k) => k.results !== null).map((k) => k.kind)).toEqual(['inference']);
  });

  it("maps the server's errors to OpenTinkerError with code, field and status", async () => {
    const invalid = await alice.jobs.submit({ kind: 'sleep', resources: { tpus: 1 } } as never).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OpenTinkerError);
    expect(invalid).toMatchObject({ code: 'OT_ERR_VALIDATION', status: 400, field: 'resources.tpus' });
    expect((invalid as Error).message).toContain('tpus');
    await expect(alice.users.list()).rejects.toMatchObject({ code: 'OT_ERR_FORBIDDEN', status: 403 });
    await expect(alice.jobs.get('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: 'OT_ERR_NOT_FOUND', status: 404 });
    await expect(alice.jobs.get('not-a-uuid')).rejects.toMatchObject({ code: 'OT_ERR_VALIDATION', status: 400 });
    await expect(alice.environments.get('nope')).rejects.toMatchObject({ code: 'OT_ERR_NOT_FOUND', status: 404 });
    const anonymous = new OpenTinkerClient({ baseUrl });
    await expect(anonymous.jobs.list()).rejects.toMatchObject({ code: 'OT_ERR_UNAUTHENTICATED', status: 401 });
    const wrong = new OpenTinkerClient({ baseUrl, apiKey: 'otk_wrong_key_0123456789abcdef' });
    const refused = await wrong.users.me().catch((e: unknown) => e);
    expect(isOpenTinkerError(refused) && refused.code).toBe('OT_ERR_UNAUTHENTICATED');
  });

  it('retries GETs but never a submit when the server cannot be reached, and names the URL', async () => {
    const closed = await closedPort();
    const calls: string[] = [];
    const counting: FetchLike = (request, init) => {
      calls.push(request.method);
      return fetch(request, init);
    };
    const client = new OpenTinkerClient({ baseUrl: `http://127.0.0.1:${closed}`, apiKey: 'otk_x', fetch: counting, retry: { retries: 2, baseDelayMs: 1 } });
    const failure = await client.jobs.list().catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'OT_ERR_CONNECTION', status: 0 });
    expect((failure as Error).message).toContain(`http://127.0.0.1:${closed}`);
    expect((failure as Error).message).toContain('ECONNREFUSED');
    expect(calls).toEqual(['GET', 'GET', 'GET']);
    calls.length = 0;
    await expect(client.jobs.submit({ kind: 'sleep' })).rejects.toMatchObject({ code: 'OT_ERR_CONNECTION' });
    expect(calls).toEqual(['POST']);
  });

  it('cancels idempotently: twice is fine, and a retry after a lost answer returns the cancelled job', async () => {
    const running = await alice.jobs.submit({ kind: 'sleep', steps: 1000, step_seconds: 0.05 });
    await alice.jobs.cancel(running.id);
    const again = await alice.jobs.cancel(running.id);
    expect(again.state === 'cancelled' || again.cancel_requested).toBe(true);
    expect((await alice.waitForJob(running.id)).state).toBe('cancelled');
    expect((await alice.jobs.cancel(running.id)).state).toBe('cancelled');

    // A job waiting behind one that holds every CPU slot stays queued, so the first cancel ends it at
    // once; its answer is lost.
    const blocker = await alice.jobs.submit({ kind: 'sleep', steps: 1000, step_seconds: 0.05, resources: { cpu_slots: 2 } });
    await waitForState(t, blocker.id, ['running']);
    const queued = await alice.jobs.submit({ kind: 'sleep', resources: { cpu_slots: 2 } });
    let lost = false;
    const losing: FetchLike = async (request, init) => {
      const response = await fetch(request, init);
      if (request.method === 'POST' && request.url.endsWith('/cancel') && !lost) {
        lost = true;
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      }
      return response;
    };
    const flaky = new OpenTinkerClient({ baseUrl, apiKey: aliceKey, fetch: losing, retry: { baseDelayMs: 1 } });
    expect((await flaky.jobs.cancel(queued.id)).state).toBe('cancelled');
    expect(lost).toBe(true);
    await alice.jobs.cancel(blocker.id);
    expect((await alice.waitForJob(blocker.id)).state).toBe('cancelled');

    const finished = await alice.jobs.submit({ kind: 'sleep', steps: 1, step_seconds: 0 });
    await alice.waitForJob(finished.id);
    await expect(alice.jobs.cancel(finished.id)).rejects.toMatchObject({ code: 'OT_ERR_JOB_NOT_CANCELLABLE', status: 409 });
  });

  it("resumes a job's event stream cut mid-event by the network, losing and repeating nothing", async () => {
    const proxy = await cuttingProxy(new URL(baseUrl).port, 700);
    try {
      const viaProxy = new OpenTinkerClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, apiKey: t.adminKey });
      const job = await admin.jobs.submit({ kind: 'sleep', steps: 8, step_seconds: 0.03 });
      const reconnects: (number | undefined)[] = [];
      const events: JobEvent[] = [];
      for await (const e of viaProxy.watchJob(job.id, { backoff: { baseDelayMs: 1 }, onReconnect: (i) => reconnects.push(i.lastEventId) })) {
        events.push(e);
      }
      // What an uninterrupted reader sees, read after the fact.
      const reference = parseSse((await t.request('GET', `/v1/jobs/${job.id}/events`)).text);
      expect(proxy.cuts()).toBe(1);
      expect(proxy.sentBeforeCut()).toMatch(/event: [\s\S]*[^\n]$/); // the cut fell inside an event
      expect(reconnects).toHaveLength(1);
      const ids = events.filter((e) => e.type !== 'end').map((e) => e.id);
      expect(ids).toEqual(reference.filter((e) => e.id).map((e) => Number(e.id)));
      expect(new Set(ids).size).toBe(ids.length);
      // It resumed right after the last event it had whole, so the one cut in half came again.
      expect(ids).toContain(reconnects[0]! + 1);
      expect(events.map((e) => e.data)).toEqual(reference.map((e) => e.data));
      expect(events[events.length - 1]).toEqual({ type: 'end', data: { state: 'succeeded' } });
    } finally {
      await proxy.close();
    }
  });

  it('reads environments, devices and health', async () => {
    const envs = await alice.environments.list();
    expect(envs.map((e) => e.id)).toEqual(expect.arrayContaining(['math', 'gomoku']));
    const math = await alice.environments.get('math');
    expect(math).toMatchObject({ id: 'math', status: 'loaded' });
    expect(math.config_schema).toBeTruthy();
    const workers = await alice.devices.list();
    expect(workers[0].devices.some((d) => d.kind === 'cpu')).toBe(true);
    const anonymous = new OpenTinkerClient({ baseUrl });
    expect(await anonymous.health.live()).toEqual({ status: 'ok' });
    expect((await anonymous.health.ready()).status).toBe('ok');
    // Routes not wrapped by a method are reachable, typed, through `raw`.
    const { data } = await alice.raw.GET('/v1/environments/{id}/protocol/v1/info', { params: { path: { id: 'gomoku' } } });
    expect(data).toMatchObject({ id: 'gomoku', protocol_version: '1' });
  });
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * A TCP proxy to the server that destroys its first connection once `cutAfter` bytes of the answer
 * went through — a network drop in the middle of the event stream, as a laptop or a proxy causes.
 */
async function cuttingProxy(targetPort: string, cutAfter: number): Promise<{ port: number; cuts(): number; sentBeforeCut(): string; close(): Promise<void> }> {
  let connections = 0;
  let cuts = 0;
  let sent = '';
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const first = connections++ === 0;
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    upstream.connect(Number(targetPort), '127.0.0.1');
    client.pipe(upstream);
    let passed = 0;
    upstream.on('data', (chunk: Buffer) => {
      if (first) sent += chunk.subarray(0, Math.max(0, cutAfter - passed)).toString();
      if (first && passed + chunk.length >= cutAfter) {
        client.write(chunk.subarray(0, Math.max(0, cutAfter - passed)));
        passed = cutAfter;
        cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      passed += chunk.length;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on('close', end).on('error', end);
    client.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    cuts: () => cuts,
    sentBeforeCut: () => sent,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
