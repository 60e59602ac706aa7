import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { startTestApp, waitForState, type TestApp } from '../support/test-app';
import { tinyHubModelFiles } from '../support/tiny-hub-model';

const SLOW = 120_000;
const REPO = 'tiny-org/tiny-chat';

function inferenceSpec(path: string): Record<string, unknown> {
  return {
    kind: 'inference',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
    model: { path, chat_template: 'plain' },
    rollout: { max_new_tokens: 4 },
    num_tasks: 2,
    samples_per_task: 1,
    batch_size: 2,
  };
}

describe('jobs naming a Hugging Face repo (model.path hf:Org/Name)', () => {
  let hub: FakeHub;
  let t: TestApp;

  beforeAll(async () => {
    hub = await startFakeHub([{ type: 'model', id: REPO, revisions: { main: await tinyHubModelFiles() } }]);
    t = await startTestApp({ config: { hub_endpoint: hub.url } });
  }, SLOW);
  afterAll(async () => {
    await t?.close();
    await hub?.close();
  });

  it(
    "runs an inference job on a repo fetched into the worker's cache, and a second one from the cache",
    async () => {
      const first = await t.request('POST', '/v1/jobs', { body: inferenceSpec(`hf:${REPO}`) });
      expect(first.status).toBe(201);
      const done = await waitForState(t, first.body.id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      const commit = hub.commitOf('model', REPO, 'main');
      const snapshot = join(t.home, 'hub', 'models--tiny-org--tiny-chat', 'snapshots', commit);
      expect(readdirSync(snapshot)).toContain('model.safetensors');
      const log = (await t.request('GET', `/v1/jobs/${first.body.id}/logs`)).text;
      expect(log).toMatch(/hub: fetching \d+ file\(s\) of hf:tiny-org\/tiny-chat/);
      // (Job logs name the data folder $OPENTINKER_HOME.)
      expect(log).toContain(`policy: hf:${REPO} ($OPENTINKER_HOME/hub/models--tiny-org--tiny-chat/snapshots/${commit})`);

      hub.requests.length = 0;
      const second = await t.request('POST', '/v1/jobs', { body: inferenceSpec(`hf:${REPO}@main`) });
      expect((await waitForState(t, second.body.id, ['succeeded', 'failed', 'cancelled'], 90_000)).state).toBe('succeeded');
      expect(hub.requests.map((r) => r.path)).toEqual([`/api/models/${REPO}/revision/main`]);
      expect((await t.request('GET', `/v1/jobs/${second.body.id}/logs`)).text).toMatch(/from the cache/);
    },
    SLOW,
  );

  it(
    'trains LoRA on a repo from the cache and saves its adapter',
    async () => {
      const res = await t.request('POST', '/v1/jobs', {
        body: {
          kind: 'train',
          environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 2 } },
          model: { path: `hf:${REPO}`, chat_template: 'plain', lora: { rank: 2 } },
          algorithm: { rollout_n: 2 },
          rollout: { max_new_tokens: 4 },
          batch_size: 2,
          total_steps: 1,
          val_batch_size: 2,
        },
      });
      expect(res.status).toBe(201);
      const done = await waitForState(t, res.body.id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      const checkpoints = (await t.request('GET', `/v1/jobs/${res.body.id}/checkpoints`)).body as Array<{ has_adapter: boolean }>;
      expect(checkpoints.at(-1)).toMatchObject({ has_adapter: true });
    },
    SLOW,
  );

  it(
    'refuses a malformed repo name at submission, and fails a job on a repo the Hub does not have',
    async () => {
      const bad = await t.request('POST', '/v1/jobs', { body: inferenceSpec('hf:../../etc') });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'model.path' });
      expect(bad.body.message).toMatch(/is not a Hugging Face repo/);

      const missing = await t.request('POST', '/v1/jobs', { body: inferenceSpec('hf:nobody/nothing') });
      expect(missing.status).toBe(201);
      const failed = await waitForState(t, missing.body.id, ['succeeded', 'failed', 'cancelled'], 60_000);
      expect(failed.state).toBe('failed');
      expect(failed.error).toMatch(/model\.path hf:nobody\/nothing: no such model repo or revision on http:\/\/127\.0\.0\.1/);
      expect(existsSync(join(t.home, 'hub', 'models--nobody--nothing', 'blobs'))).toBe(false);
    },
    SLOW,
  );
});
