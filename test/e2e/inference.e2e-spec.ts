import { startTestApp, TestApp, waitForState } from '../support/test-app';

const SLOW = 120_000;

/** tiny-char on bare equations: a few tasks, a few tokens each, so the job takes seconds on a CPU. */
function inferenceSpec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'inference',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 6 } },
    model: { preset: 'tiny-char', chat_template: 'plain' },
    rollout: { max_new_tokens: 4 },
    num_tasks: 3,
    samples_per_task: 2,
    batch_size: 4,
    ...overrides,
  };
}

describe('inference jobs through the HTTP API', () => {
  let t: TestApp;
  let bob: string;

  beforeAll(async () => {
    t = await startTestApp();
    bob = (await t.request('POST', '/v1/users', { body: { name: 'bob' } })).body.api_key.key;
  }, SLOW);
  afterAll(async () => {
    await t.close();
  });

  it(
    'runs a preset on math tasks and serves its results as JSON lines',
    async () => {
      const submitted = await t.request('POST', '/v1/jobs', { body: inferenceSpec() });
      expect(submitted.status).toBe(201);
      const id = submitted.body.id as string;
      const done = await waitForState(t, id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      expect(done.progress).toMatchObject({ step: 6, total: 6 });

      const res = await t.request('GET', `/v1/jobs/${id}/results`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
      const lines = res.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toHaveLength(6);
      for (const line of lines) {
        expect(Object.keys(line)).toEqual(expect.arrayContaining(['task_index', 'sample', 'task', 'messages', 'response', 'reward', 'finish', 'info', 'ground_truth', 'tokens']));
        expect(line.messages.at(-1)).toEqual({ role: 'assistant', content: line.response });
        expect(line.info).toHaveProperty('correct');
        expect(line.tokens.generated).toBeGreaterThan(0);
      }
      expect(lines.map((l) => `${l.task_index}/${l.sample}`)).toEqual(['0/0', '0/1', '1/0', '1/1', '2/0', '2/1']);

      const metrics = (await t.request('GET', `/v1/jobs/${id}/metrics?name=reward%2Fmean`)).body as Array<{ step: number; value: number }>;
      expect(metrics.map((p) => p.step)).toEqual([4, 6]);
      expect(metrics[1].value).toBeCloseTo(lines.reduce((a, l) => a + l.reward, 0) / 6, 6);
      const artifacts = ((await t.request('GET', `/v1/jobs/${id}/artifacts`)).body as Array<{ name: string }>).map((a) => a.name).sort();
      expect(artifacts).toEqual(['results.jsonl', 'summary.json']);

      // Only the owner sees them.
      expect((await t.request('GET', `/v1/jobs/${id}/results`, { key: bob })).body).toMatchObject({ code: 'OT_ERR_NOT_FOUND' });
    },
    SLOW,
  );

  it('refuses bad specs at submission with the field at fault', async () => {
    const refused = async (overrides: Record<string, unknown>, field: string, message: RegExp, key?: string) => {
      const res = await t.request('POST', '/v1/jobs', { body: inferenceSpec(overrides), key });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field });
      expect(res.body.message).toMatch(message);
    };
    await refused({ environment: { id: 'nope' } }, 'environment.id', /Unknown environment nope \(known: .*math/);
    await refused({ environment: { id: 'math', config: { difficulty: 9 } } }, 'environment.config.difficulty', /difficulty/);
    await refused({ model: { preset: 'huge' } }, 'model.preset', /Unknown model preset huge \(known: .*tiny-char/);
    await refused({ model: { path: 'job:00000000-0000-4000-8000-000000000000' } }, 'model.path', /No job/);
    // Another user's job, and a job that saves no checkpoints.
    const sleeper = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 1, step_seconds: 0 } })).body.id as string;
    await refused({ model: { path: `job:${sleeper}` } }, 'model.path', /No job/, bob);
    await refused({ model: { path: `job:${sleeper}/step-2` } }, 'model.path', /is a sleep job; only train, session and tinker jobs save checkpoints/);
  });

  it('has no results before an inference job writes any, nor for other kinds', async () => {
    const sleeper = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 1, step_seconds: 0 } })).body.id as string;
    const res = await t.request('GET', `/v1/jobs/${sleeper}/results`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'OT_ERR_RESULTS_NOT_FOUND', field: 'id' });
  });

  it(
    'fails fast, with the reason in the job error and log, for an environment that cannot start',
    async () => {
      const res = await t.request('POST', '/v1/jobs', { body: inferenceSpec({ environment: { id: 'math', config: { source: 'dataset' } } }) });
      expect(res.status).toBe(201);
      const done = await waitForState(t, res.body.id, ['succeeded', 'failed', 'cancelled'], 60_000);
      expect(done.state).toBe('failed');
      expect(done.error).toMatch(/^environment\.config\.train_path: environment math could not start: source .dataset. needs train_path/);
      expect((await t.request('GET', `/v1/jobs/${res.body.id}/logs`)).text).toMatch(/environment math could not start/);
    },
    SLOW,
  );
});
