import { defineEnvironment, EnvironmentError, OpenTinkerEnvironment, RemoteEnvironment, z } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import { createEnvServer, createOpenTinkerEnvServer } from '../../src/registry/env-server';
import { resolveEnvironment } from '../../src/registry/resolve-environment';
import { unusedPort } from '../support/unused-port';

/** The protocol driven with plain HTTP, as a Python or Go client would. */
describe('HTTP environment protocol (opentinker env serve)', () => {
  let app: FastifyInstance;
  let base: string;
  let counter: Environment<unknown, unknown>;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  beforeAll(async () => {
    counter = await resolveEnvironment(join(process.cwd(), 'test/fixtures/plugins/valid-cjs'), process.cwd());
    ({ app } = await createEnvServer(counter, { config: { target: 3 }, maxEpisodes: 3 }));
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => app.close());

  it('describes itself and pages tasks', async () => {
    expect(await call('GET', '/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    const info = await call('GET', '/v1/info');
    expect(info.body).toMatchObject({
      id: 'counter',
      version: '1.2.0',
      protocol_version: '1',
      turn_mode: 'multi',
      task_source: 'generator',
      config: { target: 3 },
      tasks: { train: null, test: 5 },
    });
    expect(info.body.config_schema.additionalProperties).toBe(false);
    const tasks = await call('GET', '/v1/tasks?split=test&offset=3&limit=10');
    expect(tasks.body).toEqual({ split: 'test', offset: 3, total: 5, tasks: [{ start: 0 }, { start: 1 }] });
    const bad = await call('GET', '/v1/tasks?split=dev');
    expect([bad.status, bad.body.code]).toEqual([400, 'ENV_BAD_REQUEST']);
  });

  it('plays an episode: create, step until done, refuse step after done, delete', async () => {
    const created = await call('POST', '/v1/episodes', { task: { start: 1 }, seed: 7 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ messages: [{ role: 'user', content: 'Count from 1. Say 2.' }], task: { start: 1 } });
    const id = created.body.episode_id;
    expect((await call('POST', `/v1/episodes/${id}/step`, { action: '2' })).body).toEqual({
      observation: 'Say 3.',
      observation_role: 'user',
      reward: 1,
      done: false,
      info: { right: true },
    });
    expect((await call('POST', `/v1/episodes/${id}/step`, { action: '3' })).body).toMatchObject({ reward: 1, done: true });
    const after = await call('POST', `/v1/episodes/${id}/step`, { action: '4' });
    expect([after.status, after.body.code]).toEqual([409, 'ENV_STEP_AFTER_DONE']);
    expect((await call('DELETE', `/v1/episodes/${id}`)).status).toBe(204);
    expect((await call('DELETE', `/v1/episodes/${id}`)).status).toBe(404);
    const gone = await call('POST', `/v1/episodes/${id}/step`, { action: '4' });
    expect([gone.status, gone.body.code]).toEqual([404, 'ENV_EPISODE_CLOSED']);
  });

  it('takes a task by split and index, and per-episode config overrides', async () => {
    const created = await call('POST', '/v1/episodes', { split: 'test', index: 2, seed: 1, config: { target: 1 } });
    expect(created.body.messages[0].content).toBe('Count from 2. Say 3.');
    expect((await call('POST', `/v1/episodes/${created.body.episode_id}/step`, { action: '3' })).body.done).toBe(true);
    const outOfRange = await call('POST', '/v1/episodes', { split: 'test', index: 99, seed: 1 });
    expect([outOfRange.status, outOfRange.body.code, outOfRange.body.field]).toEqual([400, 'ENV_INVALID_TASK', 'index']);
    const badConfig = await call('POST', '/v1/episodes', { split: 'test', index: 0, seed: 1, config: { targett: 2 } });
    expect([badConfig.status, badConfig.body.code, badConfig.body.field]).toEqual([400, 'ENV_INVALID_CONFIG', 'config.targett']);
  });

  it('refuses malformed requests with the field', async () => {
    const noSeed = await call('POST', '/v1/episodes', { task: {} });
    expect([noSeed.status, noSeed.body.field]).toEqual([400, 'seed']);
    const extra = await call('POST', '/v1/episodes', { seed: 1, colour: 'red' });
    expect([extra.status, extra.body.field]).toEqual([400, 'colour']);
    const json = await call('POST', '/v1/episodes', '{"seed":');
    expect(json.status).toBe(400);
    const noAction = await call('POST', '/v1/episodes/x/step', {});
    expect([noAction.status, noAction.body.field]).toEqual([400, 'action']);
    expect((await call('GET', '/v2/info')).status).toBe(404);
  });

  it('caps open episodes', async () => {
    const ids: string[] = [];
    for (;;) {
      const res = await call('POST', '/v1/episodes', { task: { start: 0 }, seed: 1 });
      if (res.status !== 201) {
        expect([res.status, res.body.code]).toEqual([429, 'ENV_CAPACITY']);
        break;
      }
      ids.push(res.body.episode_id);
      expect(ids.length).toBeLessThanOrEqual(3);
    }
    for (const id of ids) await call('DELETE', `/v1/episodes/${id}`);
  });

  it('works through RemoteEnvironment exactly like a local environment', async () => {
    const remote = await RemoteEnvironment.connect({ url: base });
    expect(remote.tasks.size('test')).toBe(5);
    const task = await remote.tasks.get('test', 4);
    expect(task).toEqual({ start: 1 });
    const episode = remote.newEpisode();
    expect(await episode.reset(task, 1)).toEqual([{ role: 'user', content: 'Count from 1. Say 2.' }]);
    expect(await episode.step('2')).toMatchObject({ reward: 1, done: false });
    expect(await episode.step('nope')).toMatchObject({ reward: -1, done: true });
    await expect(episode.step('x')).rejects.toMatchObject({ code: 'ENV_STEP_AFTER_DONE' });
    await episode.close();
    await episode.close();
  });
});

describe('protocol server guards', () => {
  it('requires the token when one is set', async () => {
    const env = await resolveEnvironment(join(process.cwd(), 'test/fixtures/plugins/valid-esm'), process.cwd());
    const { app } = await createEnvServer(env, { token: 'sekrit-token-123' });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const denied = await fetch(`${base}/v1/info`);
      expect(denied.status).toBe(401);
      expect(((await denied.json()) as any).code).toBe('ENV_UNAUTHENTICATED');
      expect((await fetch(`${base}/v1/info`, { headers: { authorization: 'Bearer sekrit-token-123' } })).status).toBe(200);
      const remote = await RemoteEnvironment.connect({ url: base, token: 'sekrit-token-123' });
      expect(remote.info.id).toBe('coin');
      await expect(RemoteEnvironment.connect({ url: base, token: 'wrong', retries: 1 })).rejects.toMatchObject({ code: 'ENV_UNAUTHENTICATED' });
    } finally {
      await app.close();
    }
  });

  it('times out a slow environment call, closes that episode, and expires idle episodes', async () => {
    let stepDelay = 0;
    const slow = defineEnvironment({
      id: 'slow',
      version: '1.0.0',
      description: 'sleeps in step',
      turnMode: 'multi',
      taskSource: 'generator',
      configSchema: z.object({}).strict(),
      create: () => ({
        tasks: { size: () => 1, get: () => ({}) },
        newEpisode: () => ({
          reset: () => [{ role: 'user' as const, content: 'go' }],
          step: async () => {
            await new Promise((r) => setTimeout(r, stepDelay));
            if (stepDelay < 0) throw new EnvironmentError('ENV_INTERNAL', 'never');
            return { observation: 'ok', reward: 0, done: false, info: {} };
          },
          close: () => undefined,
        }),
      }),
    });
    const { app, store } = await createEnvServer(slow, { callTimeoutSeconds: 0.2, idleSeconds: 0.3 });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const post = (path: string, body: unknown) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const id = ((await (await post('/v1/episodes', { seed: 1 })).json()) as any).episode_id;
      stepDelay = 1000;
      const timedOut = await post(`/v1/episodes/${id}/step`, { action: 'x' });
      expect(timedOut.status).toBe(504);
      expect(((await timedOut.json()) as any).code).toBe('ENV_TIMEOUT');
      expect((await post(`/v1/episodes/${id}/step`, { action: 'x' })).status).toBe(404);
      stepDelay = 0;
      await post('/v1/episodes', { seed: 2 });
      expect(store.open).toBe(1);
      await new Promise((r) => setTimeout(r, 1600));
      expect(store.open).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('retries a server that is down, then fails with a clear error naming the URL', async () => {
    // A free port, not a fixed one: fetch refuses "bad ports" such as 9 without trying to connect.
    const port = await unusedPort();
    const started = Date.now();
    await expect(RemoteEnvironment.connect({ url: `http://127.0.0.1:${port}`, retries: 3, backoffMs: 50 })).rejects.toThrow(
      `Environment server http://127.0.0.1:${port} is unreachable after 3 attempts`,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });
});

describe("OpenTinker's game-server protocol (opentinker env serve --protocol opentinker)", () => {
  let apps: FastifyInstance[];
  let base: string;

  const post = async (path: string, body: unknown) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    const counter = await resolveEnvironment(join(process.cwd(), 'test/fixtures/plugins/valid-cjs'), process.cwd());
    ({ apps } = await createOpenTinkerEnvServer(counter, { config: { target: 3 } }));
    base = await apps[0].listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => Promise.all(apps.map((a) => a.close())));

  it.each([
    ['/reset', { instance_id: 7 }, ['body', 'instance_id']],
    ['/reset', { instance_id: '' }, ['body', 'instance_id']],
    ['/reset', { seed: 1.5 }, ['body', 'seed']],
    ['/reset', { config: [] }, ['body', 'config']],
    ['/reset', { split: 'dev' }, ['body', 'split']],
    ['/reset', { index: -1 }, ['body', 'index']],
    ['/reset', [1, 2], ['body']],
    ['/step', { action: 5 }, ['body', 'action']],
    ['/step', { job_id: 'j'.repeat(257), action: 'x' }, ['body', 'job_id']],
    ['/finalize', { instance_id: null }, ['body', 'instance_id']],
  ])("refuses POST %s %j with FastAPI's 422 naming %j", async (path, body, loc) => {
    const res = await post(path, body);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'ENV_BAD_REQUEST', field: loc[1] ?? 'body', detail: [{ loc, type: expect.any(String), msg: expect.any(String) }] });
  });

  it('refuses a bad job_id in the statistics query, naming the query', async () => {
    const res = await fetch(`${base}/stats?job_id=`);
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: 'ENV_BAD_REQUEST', field: 'job_id', detail: [{ loc: ['query', 'job_id'] }] });
    expect((await fetch(`${base}/stats?job_id=j1`)).status).toBe(200);
  });

  it('plays an episode for OpenTinkerEnvironment: kwargs are the task, defaults fill instance and job ids', async () => {
    const env = await OpenTinkerEnvironment.connect({ url: base, jobId: 'job-1' });
    const episode = env.newEpisode();
    expect(await episode.reset({ start: 1 }, 0)).toEqual([{ role: 'user', content: 'Count from 1. Say 2.' }]);
    expect(await episode.step('2')).toEqual({ observation: 'Say 3.', reward: 1, done: false, info: { right: true } });
    await episode.close();
    // Left out, instance_id and job_id are `default` (upstream's pydantic defaults); an unknown instance is ignored on finalize.
    expect(await post('/reset', { task: { start: 0 } })).toMatchObject({
      status: 200,
      body: { observation: 'Count from 0. Say 1.', system_prompt: null, game_state: { task: { start: 0 } } },
    });
    expect(await post('/step', { action: '1' })).toMatchObject({ status: 200, body: { reward: 1, done: false } });
    expect(await post('/finalize', {})).toEqual({ status: 200, body: { message: 'Instance default removed' } });
    expect(await post('/finalize', {})).toEqual({ status: 200, body: { message: 'Instance default not found', status: 'ignored' } });
  });
});
