import { DataSource } from 'typeorm';
import { JobsRepository } from '../../src/jobs/jobs.repository';
import { startTenants, type Tenants } from './tenants';

const KEY = 'local-0123456789abcdef0123456789abcdef00secret';

const trainSpec = (wandb: Record<string, unknown>) => ({
  kind: 'train',
  environment: { id: 'math' },
  model: { preset: 'tiny-char', chat_template: 'plain' },
  batch_size: 2,
  total_steps: 1,
  trainer: { logger: ['wandb'], wandb },
});

/**
 * A job's W&B stream: the tenant's key is a secret like an environment token, and a self-hosted W&B is a
 * tenant-typed URL the worker connects to, under the same policy as `environment.url` (attack 6).
 */
describe('security: W&B keys stay secret, and a W&B URL is held to the remote URL policy', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants();
  });
  afterAll(() => s.t.close());

  it("refuses a plain user's loopback, private, link-local and metadata W&B URLs, and URLs carrying credentials", async () => {
    for (const base_url of [
      'http://127.0.0.1:8080',
      'http://localhost:8080',
      'http://169.254.169.254/latest',
      'http://10.0.0.1',
      'http://[::1]:80',
      'http://u:p@wandb.example',
      'file:///etc/passwd',
    ]) {
      const res = await s.t.request('POST', '/v1/jobs', { key: s.bob, body: trainSpec({ api_key: KEY, base_url }) });
      expect([base_url, res.status, res.body.code, res.body.field]).toEqual([base_url, 400, 'OT_ERR_URL_NOT_ALLOWED', 'trainer.wandb.base_url']);
      expect(res.text).not.toContain(KEY);
    }
  });

  it('keeps the W&B key out of the stored spec and every answer: it is stored apart, for the job runner', async () => {
    const job = await s.t.request('POST', '/v1/jobs', { key: s.alice, body: trainSpec({ api_key: KEY, entity: 'alice-team' }) });
    expect(job.status).toBe(201);
    expect(job.body.spec.trainer.wandb).toEqual({ base_url: 'https://api.wandb.ai', entity: 'alice-team' });
    for (const res of [
      job,
      await s.t.request('GET', `/v1/jobs/${job.body.id}`, { key: s.alice }),
      await s.t.request('GET', '/v1/jobs'),
      await s.t.request('GET', '/v1/jobs', { key: s.alice }),
    ]) {
      expect(res.text).not.toContain(KEY);
    }
    const db = s.t.app.get(DataSource);
    const [row] = await db.query('SELECT spec FROM jobs WHERE id = ?', [job.body.id]);
    expect(String(row.spec)).not.toContain(KEY);
    // Stored apart and encrypted (secrets-at-rest.security-spec.ts); the worker reads it back for the runner.
    const secrets = await db.query('SELECT path, value FROM job_secrets WHERE job_id = ?', [job.body.id]);
    expect(secrets).toEqual([{ path: 'trainer.wandb.api_key', value: expect.stringMatching(/^otsec1:/) }]);
    expect(await s.t.app.get(JobsRepository).secretsOf(job.body.id)).toEqual({ 'trainer.wandb.api_key': KEY });
  });
});
