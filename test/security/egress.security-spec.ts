import type { FastifyInstance } from 'fastify';
import { loadRegistry } from '../../src/registry/registry-loader';
import { createEnvServer, createOpenTinkerEnvServer } from '../../src/registry/env-server';
import { waitForState } from '../support/test-app';
import { bouncingServer, insideService, type TestServer } from './bouncing-server';
import { episodeCall, startTenants, type Tenants } from './tenants';

const trainSpec = (environment: Record<string, unknown>) => ({
  kind: 'train',
  environment,
  model: { preset: 'tiny-char', chat_template: 'plain' },
  algorithm: { rollout_n: 2 },
  rollout: { max_new_tokens: 4, max_turns: 2, env_timeout_seconds: 10 },
  batch_size: 2,
  total_steps: 1,
  val_batch_size: 2,
  val_before_train: false,
});

/** `[[[…]]]`, `depth` arrays deep, as text. */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/**
 * Issue 23's first round of egress attacks: an environment server the operator allows answers `307` to
 * a service inside the network (an IP literal or a name, both protocols), an `environment.url` hides
 * a loopback address in an IPv6 form, and JSON nested 100,000 deep reaches recursive validation.
 */
describe('security: outbound requests a tenant can aim follow no redirect, and every JSON a tenant sends has a depth ceiling', () => {
  let s: Tenants;
  let inside: TestServer;
  const upstreams: FastifyInstance[] = [];
  const bouncers: Record<string, TestServer> = {};

  beforeAll(async () => {
    inside = await insideService();
    const math = (await loadRegistry({ hostRoot: process.cwd(), pluginsDir: '/nonexistent-plugins' })).find((r) => r.id === 'math')!.environment!;
    const config = { style: 'equation', difficulty: 1, test_size: 2 };
    const ours = (await createEnvServer(math, { config })).app;
    const theirs = (await createOpenTinkerEnvServer(math, { config })).apps[0];
    upstreams.push(ours, theirs);
    const oursUrl = await ours.listen({ host: '127.0.0.1', port: 0 });
    const theirsUrl = await theirs.listen({ host: '127.0.0.1', port: 0 });
    // The tenant's servers answer the handshake, then bounce the calls that carry a body.
    const episodes = (method: string, path: string) => method === 'POST' && path.startsWith('/v1/episodes');
    const games = (method: string, path: string) => method === 'POST' && (path === '/reset' || path === '/finalize');
    bouncers.oursToIp = await bouncingServer(oursUrl, episodes, () => `http://127.0.0.1:${inside.port}`);
    bouncers.oursToName = await bouncingServer(oursUrl, episodes, () => `http://localhost:${inside.port}`);
    bouncers.theirsToIp = await bouncingServer(theirsUrl, games, () => `http://127.0.0.1:${inside.port}`);
    bouncers.theirsToName = await bouncingServer(theirsUrl, games, () => `http://localhost:${inside.port}`);
    bouncers.infoToIp = await bouncingServer(
      oursUrl,
      (m, p) => p === '/v1/info',
      () => `http://127.0.0.1:${inside.port}`,
    );
    // The operator allows the tenant's servers, by address and port; the inside service is not allowed.
    s = await startTenants({ worker: true, config: { environment_url_allow: Object.values(bouncers).map((b) => `127.0.0.1:${b.port}`) } });
  }, 60_000);
  afterAll(async () => {
    await s?.t.close();
    for (const b of Object.values(bouncers)) await b.close();
    for (const app of upstreams) await app.close();
    await inside?.close();
  });

  const runJob = async (environment: Record<string, unknown>) => {
    const job = await s.t.request('POST', '/v1/jobs', { key: s.bob, body: trainSpec(environment) });
    expect(job.status).toBe(201);
    const done = await waitForState(s.t, job.body.id, ['failed', 'succeeded'], 90_000);
    const logs = (await s.t.request('GET', `/v1/jobs/${job.body.id}/logs`, { key: s.bob })).text;
    return { done, logs };
  };

  for (const [name, bouncer, environment] of [
    ['the environment protocol, to an IP literal', 'oursToIp', { id: 'math' }],
    ['the environment protocol, to a name', 'oursToName', { id: 'math' }],
    ["OpenTinker's game-server protocol, to an IP literal", 'theirsToIp', { protocol: 'opentinker' }],
    ["OpenTinker's game-server protocol, to a name", 'theirsToName', { protocol: 'opentinker' }],
  ] as const) {
    it(`1. a remote environment's 307 is not followed (${name}): nothing reaches the inside service, and the error describes none of its answer`, async () => {
      inside.seen.length = 0;
      const b = bouncers[bouncer];
      const { done, logs } = await runJob({ ...environment, url: `http://127.0.0.1:${b.port}` });
      // The tenant's server was reached and bounced a call with a body …
      expect(b.seen.some((r) => r.method === 'POST' && /episodes|reset/.test(r.path))).toBe(true);
      // … which never reached the inside service.
      expect(inside.seen).toEqual([]);
      expect(done.state).toBe('failed');
      expect(done.error).toMatch(/redirect/);
      expect(done.error).toContain('environment.url');
      expect(`${done.error}\n${logs}`).not.toMatch(/billing|Invalid input|expected string/);
    }, 120_000);
  }

  it('1. a redirect of the first call (GET /v1/info) fails the job naming environment.url', async () => {
    inside.seen.length = 0;
    const { done } = await runJob({ id: 'math', url: `http://127.0.0.1:${bouncers.infoToIp.port}` });
    expect(inside.seen).toEqual([]);
    expect(done.state).toBe('failed');
    expect(done.error).toMatch(/^environment\.url: .*redirect/);
  }, 120_000);

  it('2. refuses loopback, private and non-public addresses in every IPv6 and IPv4 form at submission', async () => {
    for (const host of [
      '[::127.0.0.1]', // IPv4-compatible
      '[::ffff:127.0.0.1]', // IPv4-mapped
      '[::ffff:0:127.0.0.1]', // IPv4-translated (SIIT)
      '[::ffff:0:a9fe:a9fe]', // … to 169.254.169.254
      '[64:ff9b::7f00:1]', // NAT64 well-known prefix
      '[64:ff9b::a00:1]', // NAT64 to 10.0.0.1
      '[64:ff9b:1::a00:1]', // local-use NAT64
      '[2002:7f00:1::]', // 6to4 of 127.0.0.1
      '[2002:a9fe:a9fe::1]', // 6to4 of 169.254.169.254
      '[2001:0:4136:e378:8000:63bf:80ff:fffe]', // Teredo, client 127.0.0.1
      '[fec0::1]', // site-local
      '2130706433', // 127.0.0.1 as one number
      '0177.0.0.1', // octal
      '0x7f.1', // hexadecimal shorthand
      '0x7f000001',
      '0', // 0.0.0.0
    ]) {
      const url = `http://${host}:8088`;
      const res = await s.t.request('POST', '/v1/jobs', { key: s.bob, body: trainSpec({ id: 'math', url }) });
      expect([url, res.status, res.body.code, res.body.field]).toEqual([url, 400, 'OT_ERR_URL_NOT_ALLOWED', 'environment.url']);
    }
  });

  it('3. JSON nested 100,000 deep is a 400 naming the field on every route that parses a body, before any validation', async () => {
    const deep = nested(100_000);
    // An OpenTinker server's task list: free-form env kwargs (a 500, a stack overflow in validation, before).
    const tasks = `{"train":[{"a":${deep}}]}`;
    const job = await s.t.request('POST', '/v1/jobs', {
      key: s.bob,
      body: `{"kind":"train","environment":{"url":"http://93.184.215.14","protocol":"opentinker","tasks":${tasks}},"model":{"preset":"tiny-char"}}`,
    });
    expect([job.status, job.body.code, job.body.field]).toEqual([400, 'OT_ERR_JSON_TOO_DEEP', expect.stringMatching(/^environment\.tasks\.train\.0\.a(\.0)+$/)]);
    expect(job.body.message).toMatch(/json_max_depth/);
    const chat = await s.t.request('POST', '/v1/chat/completions', { key: s.bob, body: `{"model":"x","messages":[{"role":"user","content":${deep}}]}` });
    expect([chat.status, chat.body.code, chat.body.field]).toEqual([400, 'OT_ERR_JSON_TOO_DEEP', expect.stringMatching(/^messages\.0\.content/)]);
    const call = await s.t.request('POST', '/v1/jobs/0b6c3f4e-1d2a-4c5b-8e9f-0a1b2c3d4e5f/calls', {
      key: s.bob,
      body: `{"call_id":"a","op":"train_step","args":{"tasks":${deep}}}`,
    });
    expect([call.status, call.body.code, call.body.field]).toEqual([400, 'OT_ERR_JSON_TOO_DEEP', expect.stringMatching(/^args\.tasks/)]);
    // The environment protocol the server exposes for its own environments.
    const episode = await episodeCall(s.t, s.bob, 'math')('POST', '/v1/episodes', `{"seed":1,"config":{"x":${deep}}}`);
    expect([episode.status, episode.body.code, episode.body.field]).toEqual([400, 'ENV_BAD_REQUEST', expect.stringMatching(/^config\.x/)]);
    // A dataset row is JSON a tenant sends too: past the ceiling it is a bad row (it made the preview a 500).
    const good = '{"prompt":[{"role":"user","content":"1+1?"}],"reward_model":{"ground_truth":"2"}}';
    const upload = await s.t.request('POST', '/v1/datasets?environment=math&name=deep', {
      key: s.bob,
      headers: { 'content-type': 'application/x-ndjson' },
      body: `${good}\n${good.slice(0, -1)},"extra":${deep}}\n`,
    });
    expect([upload.status, upload.body.dataset?.invalid_rows, upload.body.dataset?.bad_rows]).toEqual([
      201,
      1,
      [{ row: 2, reason: 'line 2 nests objects and arrays deeper than 64 levels (setting json_max_depth)' }],
    ]);
    expect((await s.t.request('GET', `/v1/datasets/${upload.body.dataset.id}/preview`, { key: s.bob })).status).toBe(200);
    // The API still answers.
    expect((await s.t.request('GET', '/health')).status).toBe(200);
  });

  it("3. `opentinker env serve`'s routes (both protocols) refuse JSON past the ceiling with 400, and keep serving", async () => {
    const deep = nested(100_000);
    const [ours, theirs] = upstreams;
    const episode = await ours.inject({ method: 'POST', url: '/v1/episodes', headers: { 'content-type': 'application/json' }, payload: `{"seed":1,"config":{"x":${deep}}}` });
    expect([episode.statusCode, episode.json().code, episode.json().field]).toEqual([400, 'ENV_BAD_REQUEST', expect.stringMatching(/^config\.x/)]);
    const reset = await theirs.inject({ method: 'POST', url: '/reset', headers: { 'content-type': 'application/json' }, payload: `{"instance_id":"a","job_id":"j","x":${deep}}` });
    expect([reset.statusCode, reset.json().code, reset.json().field]).toEqual([400, 'ENV_BAD_REQUEST', expect.stringMatching(/^x/)]);
    expect((await ours.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect((await theirs.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});
