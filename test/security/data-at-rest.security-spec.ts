import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitForState } from '../support/test-app';
import { startTenants, type Tenants } from './tenants';

/** Attack 8 of SECURITY.md, the rest: file modes of the data folder, and what a failed job shows its owner. */
describe('security: data at rest and error messages', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants({ worker: true, config: { plugins_dir: join(process.cwd(), 'test', 'fixtures', 'plugins-train') } });
  });
  afterAll(() => s.t.close());

  const mode = (path: string) => statSync(path).mode & 0o777;

  it('8. the data folder is 0700; the database and uploaded datasets are 0600', async () => {
    const upload = await s.t.request('POST', '/v1/datasets?environment=math&name=a', {
      key: s.alice,
      headers: { 'content-type': 'application/x-ndjson' },
      body: JSON.stringify({ prompt: [{ role: 'user', content: '1+1?' }], reward_model: { ground_truth: '2' } }) + '\n',
    });
    expect(upload.status).toBe(201);
    expect(mode(s.t.home)).toBe(0o700);
    expect(mode(join(s.t.home, 'opentinker.db'))).toBe(0o600);
    const dir = join(s.t.home, 'datasets', upload.body.dataset.id);
    expect(mode(dir)).toBe(0o700);
    for (const f of readdirSync(dir)) expect(mode(join(dir, f))).toBe(0o600);
  });

  it("8. a failed job shows its owner the message, not a stack trace or the server's paths", async () => {
    const failing = await s.t.request('POST', '/v1/jobs', {
      key: s.alice,
      body: {
        kind: 'train',
        environment: { id: 'reset-throws' },
        model: { preset: 'tiny-char', chat_template: 'plain' },
        algorithm: { rollout_n: 2 },
        rollout: { max_new_tokens: 4, env_retries: 0 },
        batch_size: 2,
        total_steps: 1,
        val_before_train: false,
      },
    });
    expect(failing.status).toBe(201);
    const done = await waitForState(s.t, failing.body.id, ['failed', 'succeeded'], 60_000);
    expect(done.state).toBe('failed');
    expect(done.error).toContain('the game server is down');
    const logs = (await s.t.request('GET', `/v1/jobs/${failing.body.id}/logs`, { key: s.alice })).text;
    for (const text of [done.error, logs]) {
      expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);
      expect(text).not.toContain(process.cwd());
      expect(text).not.toContain(s.t.home);
    }
  }, 90_000);
});
