import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, TestApp, waitForState } from '../support/test-app';
import { writeTinyModelFolder } from '../support/tiny-model-folder';

/**
 * OpenAI's legacy completions, one model by any of its names, and top_logprobs, over HTTP: a finished
 * sleep job gets a tiny-char checkpoint (context 64) where a train job leaves one. Needs `npm run build`.
 */
describe('completions, GET /v1/models/{id} and top_logprobs (e2e)', () => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  let jobId: string;
  let model: string;

  const complete = (body: Record<string, unknown>, key = alice) => t.request('POST', '/v1/completions', { key, body: { model, ...body } });

  beforeAll(async () => {
    t = await startTestApp();
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
    const job = await t.request('POST', '/v1/jobs', { key: alice, body: { kind: 'sleep', name: 'tiny-text', steps: 1, step_seconds: 0 } });
    jobId = job.body.id;
    model = `job:${jobId}`;
    await waitForState(t, jobId, ['succeeded']);
    const step = join(t.home, 'jobs', jobId, 'work', 'checkpoints', 'step-2');
    await writeTinyModelFolder(join(step, 'model'));
    writeFileSync(join(step, 'trainer_state.json'), JSON.stringify({ step: 2, created: '2026-12-01T00:00:00.000Z' }));
  });
  afterAll(async () => t?.close());

  it('completes a text prompt in OpenAI’s shape, 16 tokens by default, the same again with the same seed', async () => {
    const res = await complete({ prompt: '12+30=', temperature: 0.7, seed: 3 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'text_completion', model: `job:${jobId}/step-2` });
    expect(res.body.id).toMatch(/^cmpl-/);
    expect(res.body.choices).toHaveLength(1);
    const [c] = res.body.choices;
    expect(c).toMatchObject({ index: 0, logprobs: null });
    expect(['stop', 'length']).toContain(c.finish_reason);
    // ByteTokenizer adds its BOS to a text prompt, as Hugging Face's tokenizers add special tokens.
    expect(res.body.usage.prompt_tokens).toBe(7);
    if (c.finish_reason === 'length') expect(res.body.usage.completion_tokens).toBe(16);
    const again = await complete({ prompt: '12+30=', temperature: 0.7, seed: 3 });
    expect(again.body.choices[0].text).toBe(c.text);
  });

  it('takes token ids and lists of prompts; choice index is prompt·n + j', async () => {
    const ids = await complete({ prompt: [256, 49, 50, 43], max_tokens: 3, temperature: 0, n: 2 });
    expect(ids.status).toBe(200);
    expect(ids.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(ids.body.choices[0].text).toBe(ids.body.choices[1].text);
    expect(ids.body.usage).toEqual({ prompt_tokens: 4, completion_tokens: ids.body.usage.completion_tokens, total_tokens: 4 + ids.body.usage.completion_tokens });
    const many = await complete({ prompt: ['a', 'bb'], max_tokens: 2, temperature: 0, n: 2 });
    expect(many.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2, 3]);
    const lists = await complete({
      prompt: [
        [256, 97],
        [256, 98, 98],
      ],
      max_tokens: 2,
      temperature: 0,
    });
    expect(lists.body.choices.map((c: { text: string }) => c.text)).toEqual(many.body.choices.filter((_: unknown, i: number) => i % 2 === 0).map((c: { text: string }) => c.text));
  });

  it('gives legacy log-probs with up to logprobs alternatives, and echo puts the prompt and its log-probs first', async () => {
    const res = await complete({ prompt: 'hi', max_tokens: 4, temperature: 0, logprobs: 3, echo: true });
    expect(res.status).toBe(200);
    const [c] = res.body.choices;
    expect(c.text.startsWith('hi')).toBe(true);
    const lp = c.logprobs;
    const n = lp.tokens.length;
    expect(n).toBe(3 + 4 - (c.finish_reason === 'stop' ? 1 : 0));
    for (const key of ['token_logprobs', 'top_logprobs', 'text_offset']) expect(lp[key]).toHaveLength(n);
    // The prompt's first token (BOS) has nothing before it.
    expect(lp.token_logprobs[0]).toBeNull();
    expect(lp.top_logprobs[0]).toBeNull();
    for (let i = 1; i < n; i++) {
      expect(lp.token_logprobs[i]).toBeLessThanOrEqual(0);
      const top = lp.top_logprobs[i];
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(3);
      expect(Object.keys(top).length).toBeLessThanOrEqual(4);
      expect(top[lp.tokens[i]]).toBeCloseTo(lp.token_logprobs[i], 5);
    }
    // Greedy: each sampled token is the most likely one at its place.
    for (let i = 3; i < n; i++) expect(Math.max(...(Object.values(lp.top_logprobs[i]) as number[]))).toBeCloseTo(lp.token_logprobs[i], 5);
    expect(lp.text_offset.slice(3)[0]).toBe(2);
    const scored = await complete({ prompt: 'hi', max_tokens: 0, logprobs: 0, echo: true });
    expect(scored.body.choices[0]).toMatchObject({ text: 'hi', finish_reason: 'length' });
    expect(scored.body.choices[0].logprobs.token_logprobs).toEqual(lp.token_logprobs.slice(0, 3));
    expect(scored.body.usage.completion_tokens).toBe(0);
  });

  it('cuts at stop strings', async () => {
    const whole = (await complete({ prompt: 'x', max_tokens: 12, temperature: 0 })).body.choices[0].text as string;
    expect(whole.length).toBeGreaterThan(5);
    const stop = whole.slice(3, 5);
    const res = await complete({ prompt: 'x', max_tokens: 12, temperature: 0, stop: [stop] });
    expect(res.body.choices[0]).toMatchObject({ text: whole.slice(0, whole.indexOf(stop)), finish_reason: 'stop' });
  });

  it('streams text_completion chunks that add up to the whole answer, log-probs with each choice’s last chunk, usage, then [DONE]', async () => {
    const request = { prompt: 'ab', max_tokens: 8, seed: 4, n: 2, logprobs: 1, echo: true };
    const whole = (await complete(request)).body;
    const res = await complete({ ...request, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    const events = res.text.split('\n\n').filter(Boolean);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
    for (const c of chunks) expect(c).toMatchObject({ object: 'text_completion', id: chunks[0].id, model: `job:${jobId}/step-2` });
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((c) => c.choices.filter((ch: { index: number }) => ch.index === index));
      expect(mine.map((ch: { text: string }) => ch.text).join('')).toBe(whole.choices[index].text);
      const last = mine[mine.length - 1];
      expect(last.finish_reason).toBe(whole.choices[index].finish_reason);
      expect(last.logprobs).toEqual(whole.choices[index].logprobs);
    }
    expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: whole.usage });
  });

  it('refuses what it cannot do with OpenAI’s error shape, naming the parameter', async () => {
    const cases: Array<[Record<string, unknown>, string, number]> = [
      [{ prompt: 'x', logprobs: 6 }, 'logprobs', 400],
      [{ prompt: 'x', suffix: 'y' }, 'suffix', 400],
      [{ prompt: 'x', best_of: 3 }, 'best_of', 400],
      [{ prompt: 'x', tools: [] }, 'tools', 400],
      [{ prompt: [] }, 'prompt', 400],
      [{ prompt: 'x', max_tokens: 100 }, 'max_tokens', 400],
      [{ prompt: [999999] }, 'prompt', 400],
      [{ prompt: 'x', model: 'job:00000000-0000-4000-8000-000000000000' }, 'model', 404],
    ];
    for (const [body, param, status] of cases) {
      const res = await complete(body);
      expect([res.status, res.body.error?.param, res.body.error?.type]).toEqual([status, param, status === 404 ? 'not_found_error' : 'invalid_request_error']);
    }
    const long = await complete({ prompt: 'x', max_tokens: 100 });
    expect(long.body).toMatchObject({ code: 'OT_ERR_CONTEXT_LENGTH_EXCEEDED' });
    expect(long.body.message).toContain("This model's maximum context length is 64 tokens");
    expect((await complete({ prompt: 'x' }, bob)).status).toBe(404);
  });

  it('answers top_logprobs on chat completions (up to 20), the sampled token among them when greedy', async () => {
    const res = await t.request('POST', '/v1/chat/completions', {
      key: alice,
      body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 20 },
    });
    expect(res.status).toBe(200);
    for (const entry of res.body.choices[0].logprobs.content) {
      expect(entry.top_logprobs).toHaveLength(20);
      expect(entry.top_logprobs[0]).toEqual({ token: entry.token, logprob: entry.logprob, bytes: entry.bytes });
      for (const alt of entry.top_logprobs) expect(Object.keys(alt).sort()).toEqual(['bytes', 'logprob', 'token']);
    }
  });

  it('GET /v1/models/{id} answers the entry GET /v1/models lists, by any name, encoded or not; someone else’s is 404', async () => {
    const listed = (await t.request('GET', '/v1/models', { key: alice })).body.data;
    expect(listed.map((m: { id: string }) => m.id)).toEqual([`job:${jobId}/step-2`]);
    for (const name of [`job:${jobId}`, `job:${jobId}%2Fstep-2`, `job:${jobId}/step-2`, `${jobId}%2Fstep-2`, jobId, 'tiny-text']) {
      const res = await t.request('GET', `/v1/models/${name}`, { key: alice });
      expect([name, res.status]).toEqual([name, 200]);
      expect(res.body).toEqual(listed[0]);
    }
    const missing = await t.request('GET', `/v1/models/job:${jobId}%2Fstep-9`, { key: alice });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND', error: { type: 'not_found_error', param: 'id' } });
    const theirs = await t.request('GET', `/v1/models/job:${jobId}`, { key: bob });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe('OT_ERR_MODEL_NOT_FOUND');
  });
});
