import { encodeForwardBackwardRequest, PROTOBUF_CONTENT_TYPE } from '@opentinker/tinker-wire';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { TINKER_META_FILE, tinkerCheckpointDir } from '../../src/rollout/tinker-checkpoint-files';
import { TinkerRepository } from '../../src/tinker/tinker.repository';
import { startTenants, type Tenants } from './tenants';

/**
 * Attacks on the Tinker routes (`/api/v1`, SECURITY.md): names that try to leave a checkpoint's folder,
 * base models that name host folders or other users' jobs, ids of other users' futures, forged or
 * altered checkpoint download signatures, and bodies built to exhaust memory (large, or small zstd
 * frames that inflate). Without a worker: every refusal here happens at the API, before any runner.
 */
describe('Tinker API attacks', () => {
  let s: Tenants;
  let sessionId: string;
  let modelId: string;

  beforeAll(async () => {
    s = await startTenants({ config: { tinker_request_max_bytes: 1024 * 1024 } });
    const post = (path: string, body: unknown, key = s.alice) => s.t.request('POST', `/api/v1/${path}`, { key, body });
    sessionId = (await post('create_session', { tags: [], sdk_version: '0.38.0' })).body.session_id;
    modelId = (await post('create_model', { session_id: sessionId, model_seq_id: 0, base_model: 'tiny-char', lora_config: { rank: 2 } })).body.model_id;
  });
  afterAll(async () => s?.t.close());

  const post = (path: string, body: unknown, key = s.alice) => s.t.request('POST', `/api/v1/${path}`, { key, body });

  let seq = 0;
  it.each(['..', '.', '../other', 'a/b', '.hidden', 'x'.repeat(129), 'new\nline'])('refuses the checkpoint name %j before anything reaches the disk', async (name) => {
    for (const route of ['save_weights', 'save_weights_for_sampler']) {
      // Each its own seq_id: a refused one keeps its answer for a resubmission.
      const res = await post(route, { model_id: modelId, seq_id: ++seq, path: name });
      expect(res.status).toBe(400);
      expect(res.body.field).toBe('path');
    }
  });

  it.each([
    ['a checkpoint path that climbs out', (m: string) => `tinker://${m}/weights/..`],
    ['another kind of folder', (m: string) => `tinker://${m}/../weights/x`],
    ['an external checkpoint', (m: string) => `tinker://${m}/external_weights/x`],
  ])('refuses %s as a path to load', async (_, path) => {
    const res = await post('load_weights', { session_id: sessionId, model_seq_id: 1, path: path(modelId), optimizer: false });
    expect(res.status).toBe(400);
  });

  it('refuses a DELETE of a checkpoint id that leaves the checkpoint folders', async () => {
    for (const id of ['weights/..', 'weights/../../x', 'other/x', 'weights/a/b']) {
      const res = await s.t.request('DELETE', `/api/v1/training_runs/${modelId}/checkpoints/${id}`, { key: s.alice });
      expect([400, 404]).toContain(res.status);
    }
  });

  it('gives a checkpoint’s download URL to its owner only, and the keyless archive route only for a valid signature', async () => {
    // A checkpoint as a runner leaves it (no worker here).
    const model = (await s.t.app.get(TinkerRepository).findModel(modelId))!;
    const dir = tinkerCheckpointDir(join(s.t.home, 'jobs'), { job_id: model.jobId, model: 'train-0', kind: 'weights', name: 'ckpt' });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, TINKER_META_FILE), JSON.stringify({ expires_at: null }));
    writeFileSync(join(dir, 'adapter_model.safetensors'), 'weights');
    const urlOf = (path: string, key = s.alice) => s.t.request('GET', `/api/v1/training_runs/${path}/archive`, { key });
    const get = (url: string) => s.t.app.inject({ method: 'GET', url });

    const own = await urlOf(`${modelId}/checkpoints/weights/ckpt`);
    expect(own.status).toBe(200);
    const signed = new URL(own.body.url as string);
    expect((await get(signed.pathname + signed.search)).statusCode).toBe(200);
    expect((await urlOf(`${modelId}/checkpoints/weights/ckpt`, s.bob)).status).toBe(404);
    for (const path of [
      `${modelId}/checkpoints/weights/..`,
      `${modelId}/checkpoints/weights/.hidden`,
      `${modelId}/checkpoints/other/ckpt`,
      `${modelId}/checkpoints/weights/%2E%2E%2Fx`,
    ]) {
      expect([400, 404]).toContain((await urlOf(path)).status);
    }

    // Without a signature, with a forged or altered one, or for another path: refused, nothing read.
    const query = signed.searchParams;
    const other = signed.pathname.replace('/ckpt/', '/..%2F..%2F..%2Fetc/');
    for (const [url, status] of [
      [signed.pathname, 400],
      [`${signed.pathname}?expires=${query.get('expires')}&signature=${'A'.repeat(43)}`, 403],
      [`${signed.pathname}?expires=${Number(query.get('expires')) + 1}&signature=${query.get('signature')}`, 403],
      [`${signed.pathname.replace('/weights/', '/sampler_weights/')}${signed.search}`, 403],
      [`${other}${signed.search}`, 403],
    ] as const) {
      const res = await get(url);
      expect(res.statusCode).toBe(status);
      expect(res.headers['content-type']).toMatch(/json/);
    }
  });

  it('refuses base models that name a host folder, or another user’s job, with the field', async () => {
    const bobsJob = (await s.t.request('POST', '/v1/jobs', { key: s.bob, body: { kind: 'sleep', steps: 1 } })).body.id as string;
    const nobodys = '00000000-0000-4000-8000-000000000000';
    const answers: string[] = [];
    for (const base of ['/etc', '/tmp/../etc', `job:${bobsJob}`, `job:${nobodys}`]) {
      const res = await post('create_model', { session_id: sessionId, model_seq_id: 9, base_model: base });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.field).toBe('base_model');
      answers.push(res.text.replace(bobsJob, '<id>').replace(nobodys, '<id>'));
    }
    // Another user's job reads exactly as one that does not exist.
    expect(answers[2]).toBe(answers[3]);
  });

  it('answers 404 for request ids that are not the caller’s, however they are made', async () => {
    const created = await post('create_model', { session_id: sessionId, model_seq_id: 2, base_model: 'tiny-char', lora_config: { rank: 2 } });
    const [jobId, n] = (created.body.request_id as string).split('.');
    for (const id of [created.body.request_id, `${jobId}.${Number(n) - 1}`, `${jobId}.0`, 'x', `${jobId}.1e3`]) {
      expect((await post('retrieve_future', { request_id: id }, s.bob)).status).toBe(404);
    }
  });

  it('refuses a forward_backward body over tinker_request_max_bytes, sent or after zstd, without inflating it', async () => {
    const send = (payload: Buffer, encoding?: string) =>
      s.t.app.inject({
        method: 'POST',
        url: '/api/v1/forward_backward',
        headers: { authorization: `Bearer ${s.alice}`, 'content-type': PROTOBUF_CONTENT_TYPE, ...(encoding ? { 'content-encoding': encoding } : {}) },
        payload,
      });
    const big = await send(Buffer.alloc(2 * 1024 * 1024, 1));
    expect(big.statusCode).toBe(413);
    expect(JSON.parse(big.body).message).toMatch(/tinker_request_max_bytes/);
    // 64 MiB of one protobuf field that compresses to a few kilobytes.
    const request = encodeForwardBackwardRequest({ modelId, seqId: 1, lossFn: 'cross_entropy', data: [] });
    const bomb = (zlib as unknown as { zstdCompressSync(b: Buffer): Buffer }).zstdCompressSync(Buffer.concat([Buffer.from(request), Buffer.alloc(64 * 1024 * 1024)]));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const res = await send(bomb, 'zstd');
    expect(res.statusCode).toBe(413);
  });

  it('refuses a JSON forward_backward (415) and garbage protobuf (400), naming what is wrong', async () => {
    const json = await post('forward_backward', { model_id: modelId, seq_id: 1 });
    expect(json.status).toBe(415);
    const garbage = await s.t.app.inject({
      method: 'POST',
      url: '/api/v1/forward_backward',
      headers: { authorization: `Bearer ${s.alice}`, 'content-type': PROTOBUF_CONTENT_TYPE },
      payload: Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
    });
    expect(garbage.statusCode).toBe(400);
  });
});
