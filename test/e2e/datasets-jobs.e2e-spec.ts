import { startTestApp, TestApp, waitForState } from '../support/test-app';

const SLOW = 120_000;
const row = (a: number, b: number) => ({
  data_source: 'openai/gsm8k',
  prompt: [{ role: 'user', content: `${a}+${b}=` }],
  reward_model: { style: 'rule', ground_truth: String(a + b) },
});

/** An uploaded dataset reaches the job runner: the environment serves its rows (bad ones skipped) as tasks. */
describe('datasets in jobs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  }, SLOW);
  afterAll(() => t.close());

  it(
    'runs an inference job on the usable rows of an uploaded dataset, in file order',
    async () => {
      const file = [row(1, 2), { prompt: 'no answer' }, row(30, 4), row(500, 6)].map((r) => JSON.stringify(r)).join('\n') + '\n';
      const upload = await t.app.inject({
        method: 'POST',
        url: '/v1/datasets?environment=math&name=sums',
        headers: { authorization: `Bearer ${t.adminKey}`, 'content-type': 'application/x-ndjson' },
        payload: file,
      });
      expect(upload.statusCode).toBe(201);
      const id = upload.json().dataset.id as string;

      const submitted = await t.request('POST', '/v1/jobs', {
        body: {
          kind: 'inference',
          environment: { id: 'math', val_dataset: id },
          model: { preset: 'tiny-char', chat_template: 'plain' },
          rollout: { max_new_tokens: 3 },
          num_tasks: 3,
          batch_size: 3,
        },
      });
      expect(submitted.status).toBe(201);
      const done = await waitForState(t, submitted.body.id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      const lines = (await t.request('GET', `/v1/jobs/${submitted.body.id}/results`)).text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => l.ground_truth)).toEqual(['3', '34', '506']);

      // The job has ended, so the dataset may go.
      expect((await t.request('DELETE', `/v1/datasets/${id}`)).status).toBe(204);
    },
    SLOW,
  );
});
