import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { OpenTinkerClient } from '@opentinker/client';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { startTestApp, TestApp, waitForState } from '../support/test-app';
import { runCli, type CliRun } from '../support/cli-process';

async function tarEntries(source: Readable): Promise<{ name: string; size: number }[]> {
  const entries: { name: string; size: number }[] = [];
  const ex = extract();
  ex.on('entry', (h, body, next) => {
    if (h.type === 'file') entries.push({ name: h.name, size: h.size ?? 0 });
    body.on('end', next);
    body.resume();
  });
  await pipeline(source, ex as unknown as Writable);
  return entries;
}

/**
 * Serving without training: a finished sleep job gets a tiny-char checkpoint written where a train job
 * leaves one, then the checkpoint routes and the OpenAI-compatible routes are used over HTTP. Needs
 * `npm run build` (the model server runs from dist/).
 */
describe('serving checkpoints (e2e)', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  let jobId: string;

  beforeAll(async () => {
    t = await startTestApp();
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
    const job = await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', name: 'tiny-chat', steps: 1, step_seconds: 0 } });
    expect(job.status).toBe(201);
    jobId = job.body.id;
    await waitForState(t, jobId, ['succeeded']);
    const step = join(t.home, 'jobs', jobId, 'work', 'checkpoints', 'step-1');
    const config = { ...modelPreset('tiny-char'), max_position_embeddings: 64 };
    await saveHfModelDir(join(step, 'model'), { config, weights: initWeights(config, 3), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
    writeFileSync(join(step, 'trainer_state.json'), JSON.stringify({ step: 1, created: '2026-12-01T00:00:00.000Z' }));
    // Being written: never listed or served.
    mkdirSync(join(t.home, 'jobs', jobId, 'work', 'checkpoints', 'step-2.tmp', 'model'), { recursive: true });
  });
  afterAll(async () => t?.close());

  it('lists the complete checkpoints', async () => {
    const res = await t.request('GET', `/v1/jobs/${jobId}/checkpoints`, { key: alice });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    const [c] = res.body;
    expect(c).toMatchObject({ step: 1, created_at: '2026-12-01T00:00:00.000Z', has_model: true, has_adapter: false, model_path: `job:${jobId}/step-1` });
    const paths = c.files.map((f: { path: string }) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['model/config.json', 'model/model.safetensors', 'model/tokenizer.json', 'trainer_state.json']));
    expect(c.size_bytes).toBe(c.files.reduce((a: number, f: { size: number }) => a + f.size, 0));
  });

  it('downloads a checkpoint as a tar stream, by step or latest', async () => {
    const list = (await t.request('GET', `/v1/jobs/${jobId}/checkpoints`, { key: alice })).body[0];
    const res = await t.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}/checkpoints/latest/download`, headers: { authorization: `Bearer ${alice}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-tar');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="job-${jobId}-step-1.tar"`);
    const entries = await tarEntries(Readable.from([res.rawPayload]));
    expect(entries).toEqual(list.files.map((f: { path: string; size: number }) => ({ name: `step-1/${f.path}`, size: f.size })));
    const byNumber = await t.request('GET', `/v1/jobs/${jobId}/checkpoints/1/download`, { key: alice });
    expect(byNumber.status).toBe(200);
    expect(byNumber.headers['content-disposition']).toContain('step-1.tar');
  });

  it('refuses missing steps and anything that is not a step, with stable codes', async () => {
    const missing = await t.request('GET', `/v1/jobs/${jobId}/checkpoints/2/download`, { key: alice });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'OT_ERR_CHECKPOINT_NOT_FOUND', field: 'step' });
    for (const bad of ['..%2F..%2Fsecret', 'step-1', '1.5', '-1']) {
      const res = await t.request('GET', `/v1/jobs/${jobId}/checkpoints/${bad}/download`, { key: alice });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'step' });
    }
  });

  it('answers an OpenAI-style chat completion with log-probs and usage', async () => {
    const res = await t.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model: jobId, messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, temperature: 0.8, seed: 5, n: 2, logprobs: true },
    });
    expect(res.status).toBe(200);
    const body = res.body;
    expect(body).toMatchObject({ object: 'chat.completion', model: `job:${jobId}/step-1` });
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.choices).toHaveLength(2);
    for (const [i, c] of body.choices.entries()) {
      expect(c.index).toBe(i);
      expect(c.message.role).toBe('assistant');
      expect(typeof c.message.content).toBe('string');
      expect(['stop', 'length']).toContain(c.finish_reason);
      expect(c.logprobs.content.length).toBeGreaterThan(0);
      for (const lp of c.logprobs.content) {
        expect(lp.logprob).toBeLessThanOrEqual(0);
        expect(Array.isArray(lp.bytes)).toBe(true);
        expect(lp.top_logprobs).toEqual([]);
      }
    }
    expect(body.usage.prompt_tokens).toBeGreaterThan(2);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    // The same seed gives the same answer; the job's name reaches the same checkpoint.
    const again = await t.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model: 'tiny-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, temperature: 0.8, seed: 5, n: 2, logprobs: true },
    });
    expect(again.status).toBe(200);
    expect(again.body.choices.map((c: { message: { content: string } }) => c.message.content)).toEqual(
      body.choices.map((c: { message: { content: string } }) => c.message.content),
    );
  });

  it('streams chunks that add up to the same answer, then [DONE]', async () => {
    const request = { model: `${jobId}/step-1`, messages: [{ role: 'user', content: 'hello' }], max_tokens: 8, seed: 9, logprobs: true };
    const whole = (await t.request('POST', '/v1/chat/completions', { key: alice, body: request })).body;
    const res = await t.request('POST', '/v1/chat/completions', { key: alice, body: { ...request, stream: true, stream_options: { include_usage: true } } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    const lines = res.text.split('\n\n').filter(Boolean);
    expect(lines[lines.length - 1]).toBe('data: [DONE]');
    const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.replace(/^data: /, '')));
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', id: chunks[0].id, model: `job:${jobId}/step-1` });
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const text = chunks.flatMap((c) => c.choices.map((ch: { delta: { content?: string } }) => ch.delta.content ?? '')).join('');
    expect(text).toBe(whole.choices[0].message.content);
    // Text arrives as it is sampled, not in one piece at the end.
    const contentChunks = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(contentChunks.length).toBeGreaterThan(1);
    const logprobs = chunks.flatMap((c) => c.choices.flatMap((ch: { logprobs: { content: unknown[] } | null }) => ch.logprobs?.content ?? []));
    expect(logprobs).toEqual(whole.choices[0].logprobs.content);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);
    expect(chunks[chunks.length - 1].usage).toEqual(whole.usage);
  });

  it('lists the checkpoint as a model', async () => {
    const res = await t.request('GET', '/v1/models', { key: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [expect.objectContaining({ id: `job:${jobId}/step-1`, object: 'model', job_id: jobId, job_name: 'tiny-chat', step: 1 })] });
  });

  it('gives errors OpenAI clients can read', async () => {
    const bad = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: jobId, messages: [], temperature: 3 } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'OT_ERR_VALIDATION', error: { type: 'invalid_request_error', code: 'OT_ERR_VALIDATION' } });
    expect(bad.body.error.param).toBe(bad.body.field);
    const top = await t.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model: jobId, messages: [{ role: 'user', content: 'x' }], top_logprobs: 3 },
    });
    expect(top.status).toBe(400);
    expect(top.body.error.param).toBe('top_logprobs');
    const tooMany = await t.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model: jobId, messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 21 },
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.param).toBe('top_logprobs');
    const long = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: jobId, messages: [{ role: 'user', content: 'x' }], max_tokens: 500 } });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: 'OT_ERR_CONTEXT_LENGTH_EXCEEDED', field: 'max_tokens' });
    for (let i = 0; i < 2; i++) await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', name: 'twin', steps: 1, step_seconds: 0 } });
    const twin = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: 'twin', messages: [{ role: 'user', content: 'x' }] } });
    expect(twin.status).toBe(400);
    expect(twin.body).toMatchObject({ code: 'OT_ERR_MODEL_AMBIGUOUS', field: 'model' });
    const noCheckpoint = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: `${jobId}/step-7`, messages: [{ role: 'user', content: 'x' }] } });
    expect(noCheckpoint.status).toBe(404);
    expect(noCheckpoint.body.message).toContain('no checkpoint at step 7 (it has step-1)');
    // A folder that is no model: the stream is refused with a status before any event is sent.
    const broken = (await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', steps: 1, step_seconds: 0 } })).body.id;
    await waitForState(t, broken, ['succeeded']);
    const brokenDir = join(t.home, 'jobs', broken, 'work', 'checkpoints', 'step-1');
    mkdirSync(join(brokenDir, 'model'), { recursive: true });
    writeFileSync(join(brokenDir, 'model', 'config.json'), '{"model_type":"gpt-neo"}');
    const refused = await t.request('POST', '/v1/chat/completions', { key: alice, body: { model: broken, messages: [{ role: 'user', content: 'x' }], stream: true } });
    rmSync(brokenDir, { recursive: true, force: true });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'OT_ERR_MODEL_LOAD_FAILED', error: { type: 'invalid_request_error', param: 'model' } });
    const noKey = await t.request('POST', '/v1/chat/completions', { key: null, body: { model: jobId, messages: [{ role: 'user', content: 'x' }] } });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error.type).toBe('authentication_error');
  });

  it('hides the job’s checkpoints and model from another user', async () => {
    const list = await t.request('GET', `/v1/jobs/${jobId}/checkpoints`, { key: bob });
    expect(list.status).toBe(404);
    const download = await t.request('GET', `/v1/jobs/${jobId}/checkpoints/latest/download`, { key: bob });
    expect(download.status).toBe(404);
    for (const model of [jobId, `${jobId}/step-1`, 'tiny-chat']) {
      const chat = await t.request('POST', '/v1/chat/completions', { key: bob, body: { model, messages: [{ role: 'user', content: 'x' }] } });
      expect(chat.status).toBe(404);
      expect(chat.body).toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND', error: { type: 'not_found_error', param: 'model' } });
    }
    expect((await t.request('GET', '/v1/models', { key: bob })).body.data).toEqual([]);
  });

  describe('through @opentinker/client and the CLI', () => {
    let url: string;
    let client: OpenTinkerClient;
    let work: string;

    function cli(args: string[], input = ''): Promise<CliRun> {
      return runCli(args, { env: { ...process.env, HOME: work, OPENTINKER_URL: url, OPENTINKER_API_KEY: alice }, cwd: work, input });
    }

    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
      client = new OpenTinkerClient({ baseUrl: url, apiKey: alice });
      work = mkdtempSync(join(tmpdir(), 'serving-cli-'));
    });
    afterAll(() => rmSync(work, { recursive: true, force: true }));

    it('lists and downloads checkpoints, and chats whole and streamed', async () => {
      const [c] = await client.jobs.checkpoints(jobId);
      expect(c.step).toBe(1);
      const download = await client.jobs.downloadCheckpoint(jobId);
      expect(download.step).toBe(1);
      const entries = await tarEntries(Readable.fromWeb(download.stream as never));
      expect(entries.map((e) => e.name)).toEqual(c.files.map((f) => `step-1/${f.path}`));

      const request = { model: 'tiny-chat', messages: [{ role: 'user' as const, content: 'hey' }], max_tokens: 6, seed: 2 };
      const whole = await client.chat(request);
      let text = '';
      for await (const chunk of client.chat({ ...request, stream: true })) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe(whole.choices[0].message.content);
      expect((await client.models()).data.map((m) => m.id)).toEqual([`job:${jobId}/step-1`]);
      await expect(client.chat({ ...request, model: 'nope' })).rejects.toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND', field: 'model', status: 404 });
    });

    it('opentinker jobs checkpoints, jobs download --step, chat --message and chat from stdin', async () => {
      const list = await cli(['jobs', 'checkpoints', jobId.slice(0, 8)]);
      expect(list.stderr).toBe('');
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/STEP\s+SIZE\s+LORA/);
      expect(list.stdout).toContain(`job:${jobId}/step-1`);

      const got = await cli(['jobs', 'download', jobId, '--step', '1', '-o', 'ckpt.tar', '--json']);
      expect(got.code).toBe(0);
      expect(JSON.parse(got.stdout)).toMatchObject({ id: jobId, step: 1 });
      const names = (await tarEntries(Readable.from([readFileSync(join(work, 'ckpt.tar'))]))).map((e) => e.name);
      expect(names).toContain('step-1/model/config.json');
      const fallback = await cli(['jobs', 'download', jobId]);
      expect(fallback.code).toBe(0);
      expect(fallback.stdout).toContain(`job-${jobId}-step-1.tar`);
      const missing = await cli(['jobs', 'download', jobId, '--step', '7']);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('no checkpoint at step 7');

      const asJson = await cli(['chat', jobId, '--message', 'hey', '--max-tokens', '6', '--seed', '2', '--json']);
      expect(asJson.code).toBe(0);
      const completion = JSON.parse(asJson.stdout);
      const direct = await client.chat({ model: jobId, messages: [{ role: 'user', content: 'hey' }], max_tokens: 6, seed: 2 });
      expect(completion.choices[0].message.content).toBe(direct.choices[0].message.content);

      const piped = await cli(['chat', `${jobId.slice(0, 6)}/step-1`, '--max-tokens', '6', '--seed', '2'], 'hey\n');
      expect(piped.code).toBe(0);
      expect(piped.stdout).toBe(`${direct.choices[0].message.content}\n`);
      const bad = await cli(['chat', jobId, '--message', 'x', '--temperature', 'hot']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--temperature must be a number from 0 to 2, got "hot"');
    });
  });
});
