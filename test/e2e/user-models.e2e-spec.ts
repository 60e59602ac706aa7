import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp, waitForState } from '../support/test-app';
import { tinyTrainSpec } from '../support/train-metrics';
import { folderTar, writeTinyModelFolder } from '../support/tiny-model-folder';

const SLOW = 120_000;

/**
 * A model folder a user brings: uploaded as a tar stream (`POST /v1/models`), it becomes `model:<id>`,
 * usable by its owner in chat, completions and every job kind's model.path, on a server with no
 * model_roots. Needs `npm run build` (model servers and job runners run from dist/).
 */
describe('uploaded models: model:<id> (e2e)', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  let folder: string;
  let tar: Buffer;
  let model: { id: string; content_sha256: string; bytes: number; files: Array<{ path: string; size: number }> };

  const upload = (body: Buffer, key = alice, query = 'name=my-model', type = 'application/x-tar') =>
    t.app.inject({ method: 'POST', url: `/v1/models?${query}`, headers: { authorization: `Bearer ${key}`, 'content-type': type }, payload: body });

  beforeAll(async () => {
    t = await startTestApp({ config: { model_roots: '' } });
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
    folder = mkdtempSync(join(tmpdir(), 'user-model-'));
    await writeTinyModelFolder(folder);
    tar = await folderTar(folder);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('takes a Hugging Face folder as a tar stream and answers model:<id> with its files and content hash', async () => {
    const res = await upload(tar);
    expect(res.statusCode).toBe(201);
    model = JSON.parse(res.body);
    expect(model).toMatchObject({ object: 'model', owned_by: 'alice', name: 'my-model', model_type: expect.any(String) });
    expect(model.id).toMatch(/^model:[0-9a-f-]{36}$/);
    expect(model.content_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(model.files.map((f) => f.path)).toEqual(readdirSync(folder).sort());
    expect(model.bytes).toBe(model.files.reduce((a, f) => a + f.size, 0));
    expect(existsSync(join(t.home, 'models', model.id.slice('model:'.length), 'config.json'))).toBe(true);
    // The same folder again, even packed without a top folder, has the same content hash.
    const flat = JSON.parse((await upload(await folderTar(folder, '.'), alice, 'name=again')).body);
    expect(flat.content_sha256).toBe(model.content_sha256);
    expect((await t.request('DELETE', `/v1/models/${flat.id}`, { key: alice })).body).toEqual({ id: flat.id, object: 'model', deleted: true });
  });

  it('lists it for its owner only, and answers GET /v1/models/{id}', async () => {
    const mine = (await t.request('GET', '/v1/models', { key: alice })).body.data;
    expect(mine.map((m: { id: string }) => m.id)).toEqual([model.id]);
    expect((await t.request('GET', `/v1/models/${model.id}`, { key: alice })).body).toEqual(mine[0]);
    expect((await t.request('GET', '/v1/models', { key: bob })).body.data).toEqual([]);
  });

  it('serves chat and completions as model:<id>', async () => {
    const chat = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: model.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 } });
    expect(chat.status).toBe(200);
    expect(chat.body.model).toBe(model.id);
    const text = await t.request('POST', '/v1/completions', { key: alice, body: { model: model.id, prompt: '1+1=', max_tokens: 3 } });
    expect(text.status).toBe(200);
    expect(text.body.model).toBe(model.id);
  });

  it(
    'runs inference, train and session jobs from model:<id> with no model_roots',
    async () => {
      const inference = await t.request('POST', '/v1/jobs', {
        key: alice,
        body: {
          kind: 'inference',
          environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
          model: { path: model.id },
          rollout: { max_new_tokens: 3 },
          num_tasks: 2,
          batch_size: 2,
        },
      });
      expect(inference.status).toBe(201);
      const train = await t.request('POST', '/v1/jobs', { key: alice, body: tinyTrainSpec({ model: { path: model.id, lora: { rank: 2 } }, total_steps: 1 }) });
      expect(train.status).toBe(201);
      // Deleting a model a job still needs is refused.
      const busy = await t.request('DELETE', `/v1/models/${model.id}`, { key: alice });
      expect([busy.status, busy.body.code]).toEqual([409, 'OT_ERR_MODEL_IN_USE']);
      for (const id of [inference.body.id, train.body.id]) {
        const done = await waitForState(t, id, ['succeeded', 'failed'], SLOW);
        const log = (await t.request('GET', `/v1/jobs/${id}/logs`, { key: alice })).text;
        expect([done.state, done.error]).toEqual(['succeeded', null]);
        expect(log).toContain(`policy: ${model.id} (`);
      }
      const session = await t.request('POST', '/v1/jobs', {
        key: alice,
        body: {
          kind: 'session',
          environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
          model: { path: model.id },
          rollout: { max_new_tokens: 3 },
        },
      });
      expect(session.status).toBe(201);
      const sample = await t.request('POST', `/v1/jobs/${session.body.id}/calls?wait_seconds=60`, {
        key: alice,
        body: { call_id: 'p1', op: 'sample', args: { messages: [{ role: 'user', content: '1+1=' }], max_tokens: 2 } },
      });
      expect(sample.body.state).toBe('succeeded');
      await t.request('POST', `/v1/jobs/${session.body.id}/calls?wait_seconds=60`, { key: alice, body: { call_id: 'c', op: 'close' } });
      await waitForState(t, session.body.id, ['succeeded', 'failed', 'cancelled'], SLOW);
    },
    SLOW * 2,
  );

  it('is deleted with its files, after which its name is not found', async () => {
    const res = await t.request('DELETE', `/v1/models/${model.id}`, { key: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: model.id, object: 'model', deleted: true });
    expect(existsSync(join(t.home, 'models', model.id.slice('model:'.length)))).toBe(false);
    const gone = await t.request('GET', `/v1/models/${model.id}`, { key: alice });
    expect([gone.status, gone.body.code]).toEqual([404, 'OT_ERR_MODEL_NOT_FOUND']);
    const job = await t.request('POST', '/v1/jobs', { key: alice, body: tinyTrainSpec({ model: { path: model.id } }) });
    expect([job.status, job.body.field]).toEqual([404, 'model.path']);
    expect((await t.request('DELETE', '/v1/models/job:00000000-0000-4000-8000-000000000000', { key: alice })).status).toBe(400);
  });
});
