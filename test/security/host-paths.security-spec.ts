import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForState } from '../support/test-app';
import { episodeCall, startTenants, type Tenants } from './tenants';

/**
 * Attacks 1 and 2 of SECURITY.md: a tenant names a path on the server (an environment's dataset file,
 * a model folder) to read what is not theirs.
 */
describe('security: no host path from a tenant reaches the file system', () => {
  let s: Tenants;
  let modelsRoot: string;
  beforeAll(async () => {
    s = await startTenants({ worker: true, config: { model_roots: '/nonexistent-models-root' } });
    modelsRoot = join(s.t.home, 'models');
  });
  afterAll(() => s.t.close());

  const job = (key: string, spec: Record<string, unknown>) => s.t.request('POST', '/v1/jobs', { key, body: spec });
  const train = (environment: unknown, model: unknown = { preset: 'tiny-char' }) => ({ kind: 'train', environment, model, total_steps: 1, batch_size: 1 });

  it('1. refuses dataset paths in an episode config, without a byte of the file in the answer', async () => {
    for (const key of ['test_path', 'train_path']) {
      const res = await episodeCall(s.t, s.bob, 'math')('POST', '/v1/episodes', { seed: 1, config: { source: 'dataset', [key]: '/etc/passwd' } });
      expect([res.status, res.body.code, res.body.field]).toEqual([400, 'ENV_CONFIG_FORBIDDEN', `config.${key}`]);
      expect(res.text).not.toMatch(/root:|daemon|nologin/);
    }
  });

  it("1. refuses dataset paths in a job spec (another tenant's dataset file included)", async () => {
    const upload = await s.t.request('POST', '/v1/datasets?environment=math&name=a', {
      key: s.alice,
      headers: { 'content-type': 'application/x-ndjson' },
      body: JSON.stringify({ prompt: [{ role: 'user', content: 'secret question of A' }], reward_model: { ground_truth: '42' } }) + '\n',
    });
    expect(upload.status).toBe(201);
    const alicesFile = join(s.t.home, 'datasets', upload.body.dataset.id, 'data.jsonl');
    for (const [key, path] of [
      ['test_path', '/etc/passwd'],
      ['train_path', alicesFile],
      ['test_path', '/root/.bashrc'],
    ]) {
      for (const kind of ['train', 'inference']) {
        const spec =
          kind === 'train'
            ? train({ id: 'math', config: { source: 'dataset', [key]: path } })
            : { kind, environment: { id: 'math', config: { [key]: path } }, model: { preset: 'tiny-char' } };
        const res = await job(s.bob, spec);
        expect([res.status, res.body.code, res.body.field]).toEqual([400, 'OT_ERR_HOST_ONLY', `environment.config.${key}`]);
        expect(res.text).not.toContain('secret question');
        expect(res.text).not.toMatch(/root:/);
      }
    }
    // B naming A's dataset by id is "not yours".
    const byId = await job(s.bob, train({ id: 'math', dataset: upload.body.dataset.id }));
    expect([byId.status, byId.body.field]).toEqual([400, 'environment.dataset']);
  });

  it("2. refuses a model folder outside the operator's model roots: another tenant's checkpoint, the data folder", async () => {
    const checkpoint = join(s.t.home, 'jobs', '0b6c3f4e-1d2a-4c5b-8e9f-0a1b2c3d4e5f', 'work', 'checkpoints', 'step-4', 'model');
    for (const path of [checkpoint, s.t.home, '/etc', 'relative/model', `/nonexistent-models-root/../etc`]) {
      for (const kind of ['session', 'inference']) {
        const res = await job(s.bob, { kind, environment: { id: 'math' }, model: { path } });
        expect([path, res.status, res.body.code, res.body.field]).toEqual([path, 400, 'OT_ERR_HOST_ONLY', 'model.path']);
      }
    }
  });

  it('2. refuses, in the job runner, a link inside a model root that leads out of it', async () => {
    // The API sees a path under a root; the runner follows the link and refuses the real target.
    const target = join(s.t.home, 'jobs', 'someone-else', 'model');
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'config.json'), '{}');
    const t2 = await startTenants({ worker: true, config: { model_roots: modelsRoot } });
    try {
      mkdirSync(modelsRoot, { recursive: true });
      symlinkSync(target, join(modelsRoot, 'looks-fine'));
      const res = await t2.t.request('POST', '/v1/jobs', {
        key: t2.bob,
        body: { kind: 'inference', environment: { id: 'math', config: { style: 'equation', test_size: 2 } }, model: { path: join(modelsRoot, 'looks-fine') }, num_tasks: 1 },
      });
      expect(res.status).toBe(201);
      const done = await waitForState(t2.t, res.body.id, ['succeeded', 'failed'], 60_000);
      expect(done.state).toBe('failed');
      expect(done.error).toMatch(/is not a model folder you may use/);
    } finally {
      await t2.t.close();
    }
  }, 90_000);
});
