import { decodeForwardBackwardOutput, decodeSampleResponse, encodeForwardBackwardRequest, PROTOBUF_CONTENT_TYPE } from '@opentinker/tinker-wire';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, waitFor, type TestApp } from '../support/test-app';
import { writeTinkerTestBase } from '../support/tinker-test-base';

/**
 * The Tinker routes over HTTP, as the SDK's wire drives them (docs/tinker.md), without the SDK: requests
 * of one training client run in seq_id order whatever order they arrive in, a refused request's seq_id
 * is not waited for, futures long-poll and say when the runner waits for devices, sessions end on
 * finish or without heartbeats (410 after), limits are refused with their setting, and every route of
 * one user answers another user 404.
 */
describe('Tinker API over HTTP (e2e)', () => {
  let t: TestApp;
  let base: string;
  let alice: string;
  let bob: string;

  let roots: string;
  /** Sessions a test opened, finished after it so their runners free the CPU slots. */
  const opened: Array<{ id: string; key: string }> = [];

  beforeAll(async () => {
    roots = mkdtempSync(join(tmpdir(), 'tinker-roots-'));
    base = join(roots, 'tiny-base');
    await writeTinkerTestBase(base);
    t = await startTestApp({
      config: { cpu_slots: 4, max_jobs_per_user: 8, tinker_poll_seconds: 1, tinker_seq_gap_seconds: 30, tinker_max_sessions_per_user: 3, model_roots: roots },
    });
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  }, 60_000);
  afterEach(async () => {
    for (const s of opened.splice(0)) await post(`sessions/${s.id}/finish`, { reason: { type: 'success' } }, s.key);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(roots, { recursive: true, force: true });
  });

  const post = (path: string, body: unknown, key = alice) => t.request('POST', `/api/v1/${path}`, { key, body });

  async function session(key = alice): Promise<string> {
    const res = await post('create_session', { tags: [], user_metadata: {}, sdk_version: '0.38.0', type: 'create_session' }, key);
    expect(res.status).toBe(200);
    opened.push({ id: res.body.session_id, key });
    return res.body.session_id as string;
  }

  /** Polls a future until it is done; returns the final answer (JSON body, or protobuf bytes). */
  async function result(requestId: string, key = alice): Promise<{ status: number; json?: any; bytes?: Buffer }> {
    for (;;) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/retrieve_future',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ request_id: requestId, allow_metadata_only: true }),
      });
      if (res.headers['content-type'] === PROTOBUF_CONTENT_TYPE) return { status: res.statusCode, bytes: res.rawPayload };
      const json = JSON.parse(res.body);
      if (res.statusCode === 200 && json.type === 'try_again') continue;
      return { status: res.statusCode, json };
    }
  }

  async function createModel(sessionId: string, seq: number): Promise<string> {
    const res = await post('create_model', {
      session_id: sessionId,
      model_seq_id: seq,
      base_model: base,
      lora_config: { rank: 4, seed: 1, train_attn: true, train_mlp: true, train_unembed: false },
    });
    expect(res.status).toBe(200);
    expect((await result(res.body.request_id)).json).toEqual({ model_id: `${sessionId}:train:${seq}`, type: 'create_model' });
    return res.body.model_id as string;
  }

  const TOKENS = [49, 50, 43, 51, 52, 61, 52, 54];

  function fbBody(modelId: string, seqId: number, opts: { forwardOnly?: boolean; lossFn?: string } = {}): Buffer {
    const n = TOKENS.length - 1;
    return Buffer.from(
      encodeForwardBackwardRequest({
        modelId,
        seqId,
        lossFn: opts.lossFn ?? 'cross_entropy',
        forwardOnly: opts.forwardOnly ?? false,
        data: [
          {
            modelInput: TOKENS.slice(0, -1),
            lossFnInputs: { target_tokens: { dtype: 'int64', data: TOKENS.slice(1) }, weights: { dtype: 'float32', data: new Array(n).fill(1) } },
          },
        ],
      }),
    );
  }

  const submitFb = (body: Buffer, key = alice) =>
    t.app.inject({ method: 'POST', url: '/api/v1/forward_backward', headers: { authorization: `Bearer ${key}`, 'content-type': PROTOBUF_CONTENT_TYPE }, payload: body });

  const logprobsOf = (bytes: Buffer) => Array.from(decodeForwardBackwardOutput(bytes).lossFnOutputs[0].logprobs.data as Float32Array);

  it('runs one training client’s requests in seq_id order, whatever order they arrive in', async () => {
    const s = await session();
    const model = await createModel(s, 0);
    // seq 1: forward; 2: forward_backward; 3: optim_step; 4: forward. Sent last to first, as the SDK sends a request's chunks.
    const r4 = JSON.parse((await submitFb(fbBody(model, 4, { forwardOnly: true }))).body);
    const r3 = await post('optim_step', { model_id: model, seq_id: 3, adam_params: { learning_rate: 0.05 }, type: 'optim_step' });
    const r2 = JSON.parse((await submitFb(fbBody(model, 2))).body);
    const r1 = JSON.parse((await submitFb(fbBody(model, 1, { forwardOnly: true }))).body);
    const before = logprobsOf((await result(r1.request_id)).bytes!);
    const during = logprobsOf((await result(r2.request_id)).bytes!);
    expect((await result(r3.body.request_id)).json.metrics.grad_norm).toBeGreaterThan(0);
    const after = logprobsOf((await result(r4.request_id)).bytes!);
    expect(during).toEqual(before);
    // Had seq 4 run before the step, it would equal seq 1.
    expect(after.reduce((a, b) => a + b, 0)).toBeGreaterThan(before.reduce((a, b) => a + b, 0));
    // A resubmission (same model and seq_id) gets the first request back.
    expect(JSON.parse((await submitFb(fbBody(model, 2))).body).request_id).toBe(r2.request_id);
  }, 60_000);

  it('does not wait for a seq_id it refused', async () => {
    const s = await session();
    const model = await createModel(s, 0);
    const refused = await post('optim_step', { model_id: model, seq_id: 1, adam_params: { learning_rate: -1 } });
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe('adam_params.learning_rate');
    const bad = await submitFb(fbBody(model, 2, { lossFn: 'stable_reinforce' }));
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).message).toMatch(/importance_sampling/);
    const started = Date.now();
    const next = JSON.parse((await submitFb(fbBody(model, 3, { forwardOnly: true }))).body);
    expect((await result(next.request_id)).bytes).toBeDefined();
    // Well under the 30 s the runner would give a seq_id that never came.
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 60_000);

  it('fails a future with category user for what only the runner sees, and samples with sequence ids', async () => {
    const s = await session();
    const model = await createModel(s, 0);
    const snap = await post('save_weights_for_sampler', { model_id: model, seq_id: 1, sampling_session_seq_id: 0, type: 'save_weights_for_sampler' });
    const samplerId = (await result(snap.body.request_id)).json.sampling_session_id;
    expect(samplerId).toBe(`${s}:sample:0`);
    const sample = await post('asample', {
      sampling_session_id: samplerId,
      seq_id: 0,
      num_samples: 2,
      prompt: { chunks: [{ type: 'encoded_text', tokens: [49, 50] }] },
      sampling_params: { max_tokens: 3, seed: 5 },
      prompt_logprobs: true,
    });
    expect(sample.body.sample_sequence_ids).toEqual([`${samplerId}:seq:0:0`, `${samplerId}:seq:0:1`]);
    const decoded = decodeSampleResponse((await result(sample.body.request_id)).bytes!);
    expect(decoded.sequences).toHaveLength(2);
    expect(decoded.promptLogprobs?.length).toBe(2);
    expect(Number.isNaN(decoded.promptLogprobs![0])).toBe(true);
    // Requests alike from two samplers (the snapshot and the base), sent together as an RL step sends
    // them: each gets its own samples (the runner may answer them in one pass).
    const base_ = (await post('create_sampling_session', { session_id: s, sampling_session_seq_id: 1, base_model: base })).body.sampling_session_id;
    const alike = await Promise.all(
      [samplerId, base_, samplerId, base_].map((id, i) =>
        post('asample', {
          sampling_session_id: id,
          seq_id: 10 + i,
          num_samples: 3,
          prompt: { chunks: [{ type: 'encoded_text', tokens: [49, 50 + i] }] },
          sampling_params: { max_tokens: 4 },
        }),
      ),
    );
    for (const res of alike) {
      const out = decodeSampleResponse((await result(res.body.request_id)).bytes!);
      expect(out.sequences).toHaveLength(3);
      for (const seq of out.sequences) expect(seq.logprobs).toHaveLength(seq.tokens.length);
    }
    const tooLong = await post('asample', {
      sampling_session_id: samplerId,
      seq_id: 1,
      prompt: { chunks: [{ type: 'encoded_text', tokens: [1] }] },
      sampling_params: { max_tokens: 10_000 },
    });
    const failed = await result(tooLong.body.request_id);
    expect(failed.json).toEqual({ error: expect.stringMatching(/context/), category: 'user' });
  }, 60_000);

  it('answers try_again with paused_capacity while the runner waits for devices', async () => {
    // Every slot taken once the earlier tests' runners have stopped.
    const busy = await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', steps: 60, step_seconds: 1, resources: { cpu_slots: 4 } } });
    await waitFor(async () => (await t.request('GET', `/v1/jobs/${busy.body.id}`)).body.state === 'running', 30_000);
    const s = await session();
    const res = await post('create_model', { session_id: s, model_seq_id: 0, base_model: base, lora_config: { rank: 4 } });
    const poll = await post('retrieve_future', { request_id: res.body.request_id, allow_metadata_only: true });
    expect(poll.body).toMatchObject({ type: 'try_again', queue_state: 'paused_capacity', queue_state_reason: expect.stringMatching(/waiting for a worker/) });
    await t.request('POST', `/v1/jobs/${busy.body.id}/cancel`);
    expect((await result(res.body.request_id)).json.model_id).toBe(`${s}:train:0`);
  }, 60_000);

  it('ends a session on finish: heartbeats get 410 and its runner stops', async () => {
    const s = await session();
    await createModel(s, 0);
    expect((await post('session_heartbeat', { session_id: s, type: 'session_heartbeat' })).status).toBe(200);
    expect((await post(`sessions/${s}/finish`, { reason: { type: 'success' }, detail: null })).status).toBe(200);
    expect((await post('session_heartbeat', { session_id: s })).status).toBe(410);
    const listed = (await t.request('GET', '/v1/jobs?kind=tinker&limit=100', { key: alice })).body.items as Array<{ id: string }>;
    const jobs = await Promise.all(listed.map(async (j) => (await t.request('GET', `/v1/jobs/${j.id}`, { key: alice })).body as { id: string; spec: { session_id: string } }));
    const mine = jobs.filter((j) => j.spec.session_id === s);
    expect(mine).toHaveLength(1);
    await waitFor(async () => (await t.request('GET', `/v1/jobs/${mine[0].id}`, { key: alice })).body.state === 'succeeded', 20_000);
    expect((await post('create_model', { session_id: s, model_seq_id: 1, base_model: base })).status).toBe(410);
  }, 60_000);

  it('refuses a session past tinker_max_sessions_per_user, naming the setting', async () => {
    const carol = (await t.request('POST', '/v1/users', { body: { name: 'carol' } })).body.api_key.key;
    for (let i = 0; i < 3; i++) await session(carol);
    const res = await post('create_session', { tags: [], sdk_version: '0.38.0' }, carol);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'OT_ERR_LIMIT_EXCEEDED', message: expect.stringMatching(/tinker_max_sessions_per_user/) });
  });

  it('keeps every session, model, sampler, future and checkpoint to its owner: another user gets 404', async () => {
    const s = await session();
    const model = await createModel(s, 0);
    const saved = await post('save_weights', { model_id: model, seq_id: 1, path: 'mine', type: 'save_weights' });
    const path = (await result(saved.body.request_id)).json.path as string;
    expect(path).toBe(`tinker://${model}/weights/mine`);
    const sampler = await post('create_sampling_session', { session_id: s, sampling_session_seq_id: 0, base_model: base });
    const samplerId = sampler.body.sampling_session_id as string;
    const own = await session(bob);
    const asBob = [
      await post('get_info', { model_id: model }, bob),
      await post('optim_step', { model_id: model, seq_id: 2, adam_params: {} }, bob),
      await post('session_heartbeat', { session_id: s }, bob),
      await post(`sessions/${s}/finish`, { reason: { type: 'success' } }, bob),
      await post('create_model', { session_id: s, model_seq_id: 5, base_model: base }, bob),
      await post('retrieve_future', { request_id: saved.body.request_id }, bob),
      await post('weights_info', { tinker_path: path }, bob),
      await post('load_weights', { session_id: own, model_seq_id: 0, path, optimizer: false }, bob),
      await post('create_sampling_session', { session_id: own, sampling_session_seq_id: 0, model_path: path }, bob),
      await post('asample', { sampling_session_id: samplerId, seq_id: 0, prompt: { chunks: [{ type: 'encoded_text', tokens: [1] }] }, sampling_params: {} }, bob),
      await t.request('GET', `/api/v1/samplers/${samplerId}`, { key: bob }),
      await t.request('GET', `/api/v1/training_runs/${model}`, { key: bob }),
      await t.request('GET', `/api/v1/training_runs/${model}/checkpoints`, { key: bob }),
      await t.request('DELETE', `/api/v1/training_runs/${model}/checkpoints/weights/mine`, { key: bob }),
      { status: (await submitFb(fbBody(model, 3), bob)).statusCode },
    ];
    expect(asBob.map((r) => r.status)).toEqual(asBob.map(() => 404));
    expect((await t.request('GET', '/api/v1/training_runs', { key: bob })).body.training_runs).toEqual([]);
    expect((await t.request('GET', '/api/v1/checkpoints', { key: bob })).body.checkpoints).toEqual([]);
    // Served by the OpenAI-compatible routes as its adapter on its base: to its owner only.
    const completion = await t.request('POST', '/v1/completions', { key: alice, body: { model: path, prompt: '12+', max_tokens: 3, temperature: 0 } });
    expect(completion.status).toBe(200);
    expect(completion.body.model).toBe(path);
    expect((await t.request('POST', '/v1/completions', { key: bob, body: { model: path, prompt: '12+', max_tokens: 3 } })).status).toBe(404);
    // Still there for its owner.
    expect((await t.request('GET', `/api/v1/training_runs/${model}/checkpoints`, { key: alice })).body.checkpoints.map((c: { tinker_path: string }) => c.tinker_path)).toEqual([
      path,
    ]);
  }, 60_000);
});

describe('Tinker sessions without heartbeats (e2e)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ config: { tinker_session_timeout_seconds: 5 } });
  });
  afterAll(async () => t?.close());

  it('expires a session whose heartbeats stopped: its runner ends, its heartbeat gets 410', async () => {
    const s = (await t.request('POST', '/api/v1/create_session', { body: { tags: [], sdk_version: '0.38.0' } })).body.session_id;
    const created = await t.request('POST', '/api/v1/create_model', { body: { session_id: s, model_seq_id: 0, base_model: 'tiny-char', lora_config: { rank: 2 } } });
    expect(created.status).toBe(200);
    const jobId = created.body.request_id.split('.')[0];
    await waitFor(async () => (await t.request('GET', `/v1/jobs/${jobId}`)).body.state === 'running', 20_000);
    const job = await waitFor(async () => {
      const j = (await t.request('GET', `/v1/jobs/${jobId}`)).body;
      return ['succeeded', 'cancelled', 'failed'].includes(j.state) ? j : undefined;
    }, 20_000);
    expect(job.state).toBe('succeeded');
    expect((await t.request('POST', '/api/v1/session_heartbeat', { body: { session_id: s } })).status).toBe(410);
    const logs = (await t.request('GET', `/v1/jobs/${jobId}/logs`)).text;
    expect(logs).toMatch(/no heartbeat for 5 s \(operator setting tinker_session_timeout_seconds\)/);
  }, 60_000);
});
