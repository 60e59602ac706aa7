import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { openDatabase } from '../../src/database/data-source';
import { SecretsCipher } from '../../src/jobs/job-secrets-cipher';
import { JobsRepository } from '../../src/jobs/jobs.repository';
import { startTestApp, waitForState, type TestApp } from '../support/test-app';

const WANDB_KEY = 'local-0123456789abcdef0123456789abcdef00secret';
const HF_TOKEN = 'hf_alices_own_token_0123456789';
const OTHER_KEY = 'ab'.repeat(32);

const trainSpec = {
  kind: 'train',
  environment: { id: 'math' },
  model: { preset: 'tiny-char', chat_template: 'plain' },
  batch_size: 2,
  total_steps: 1,
  trainer: { logger: ['wandb'], wandb: { api_key: WANDB_KEY } },
};
const inferenceSpec = { kind: 'inference', environment: { id: 'math' }, model: { path: 'hf:private/secret', hf_token: HF_TOKEN }, num_tasks: 1, batch_size: 1 };

/** The bytes of the SQLite database and its write-ahead log. */
function databaseBytes(home: string): Buffer {
  return Buffer.concat(
    readdirSync(home)
      .filter((f) => f.startsWith('opentinker.db'))
      .map((f) => readFileSync(join(home, f))),
  );
}

/**
 * Attack 6 (part) of the second hostile-tenant round: W&B keys and environment tokens stayed in plain
 * text in `job_secrets`, also after their job ended. They are encrypted (AES-256-GCM) with a key the
 * operator holds, and deleted when the job ends.
 */
describe('security: job secrets are encrypted at rest and deleted when their job ends', () => {
  let home: string;
  let t: TestApp | null = null;
  const start = (config: Record<string, unknown> = {}) => startTestApp({ worker: false, home, config });

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'secrets-at-rest-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('stores only ciphertext under a 0600 key file, hands the runner the plaintext, deletes an ended job’s secrets, and seals old plaintext rows at start', async () => {
    t = await start();
    const alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key as string;
    const train = await t.request('POST', '/v1/jobs', { key: alice, body: trainSpec });
    const inference = await t.request('POST', '/v1/jobs', { key: alice, body: inferenceSpec });
    expect([train.status, inference.status]).toEqual([201, 201]);
    expect(inference.text).not.toContain(HF_TOKEN);

    const db = t.app.get(DataSource);
    const rows: Array<{ job_id: string; path: string; value: string }> = await db.query('SELECT job_id, path, value FROM job_secrets ORDER BY path');
    expect(rows.map((r) => r.path)).toEqual(['model.hf_token', 'trainer.wandb.api_key']);
    for (const row of rows) expect(row.value).toMatch(/^otsec1:[0-9a-f]{16}:/);
    await db.query('PRAGMA wal_checkpoint(TRUNCATE)');
    for (const secret of [WANDB_KEY, HF_TOKEN]) expect(databaseBytes(home).includes(secret)).toBe(false);
    expect(statSync(join(home, 'secrets.key')).mode & 0o777).toBe(0o600);
    // What the worker reads for the runner.
    const jobs = t.app.get(JobsRepository);
    expect(await jobs.secretsOf(train.body.id)).toEqual({ 'trainer.wandb.api_key': WANDB_KEY });

    // The job ends (cancelled while queued): its secrets go; the other job's stay.
    expect((await t.request('POST', `/v1/jobs/${train.body.id}/cancel`, { key: alice })).body.state).toBe('cancelled');
    expect(await db.query('SELECT path FROM job_secrets WHERE job_id = ?', [train.body.id])).toEqual([]);
    expect(await jobs.secretsOf(inference.body.id)).toEqual({ 'model.hf_token': HF_TOKEN });

    // A row written in plain text (by a server before encryption) is sealed at the next start.
    await db.query('UPDATE job_secrets SET value = ? WHERE job_id = ?', ['plain-old-token', inference.body.id]);
    await t.close();
    t = await start();
    const [again] = await t.app.get(DataSource).query('SELECT value FROM job_secrets WHERE job_id = ?', [inference.body.id]);
    expect(again.value).toMatch(/^otsec1:/);
    expect(await t.app.get(JobsRepository).secretsOf(inference.body.id)).toEqual({ 'model.hf_token': 'plain-old-token' });
    await t.close();
    t = null;
  }, 120_000);

  it('fails a job whose secrets another key sealed (a machine of the server with another key), naming the setting', async () => {
    const own = mkdtempSync(join(tmpdir(), 'secrets-other-key-'));
    const app = await startTestApp({ worker: true, home: own });
    try {
      // Both CPU slots busy, so the next job stays queued while its row is rewritten.
      const busy = await app.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 1000, step_seconds: 0.05, resources: { cpu_slots: 2 } } });
      await waitForState(app, busy.body.id, ['running']);
      const job = await app.request('POST', '/v1/jobs', { body: trainSpec });
      const foreign = new SecretsCipher(Buffer.alloc(32, 7), 'test').seal(job.body.id, 'trainer.wandb.api_key', WANDB_KEY);
      await app.app.get(DataSource).query('UPDATE job_secrets SET value = ? WHERE job_id = ?', [foreign, job.body.id]);
      await app.request('POST', `/v1/jobs/${busy.body.id}/cancel`);
      const failed = await waitForState(app, job.body.id, ['succeeded', 'failed', 'cancelled'], 60_000);
      expect(failed.state).toBe('failed');
      expect(failed.error).toMatch(/encrypted with another key .*set secrets_key \(OPENTINKER_SECRETS_KEY\)/);
      expect(failed.error).not.toContain(own);
      expect(await app.app.get(DataSource).query('SELECT path FROM job_secrets WHERE job_id = ?', [job.body.id])).toEqual([]);
    } finally {
      await app.close();
      rmSync(own, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses to start with another key, or with none, naming the setting', async () => {
    // What `serve` and `worker` open first (a Nest boot error ends the process, so it is called alone here).
    const boot = (values: Record<string, unknown> = {}) => openDatabase(loadConfig({}, { home, ...values }));
    await expect(boot({ secrets_key: OTHER_KEY })).rejects.toThrow(/encrypted with another key .*secrets_key \(OPENTINKER_SECRETS_KEY\)/);
    unlinkSync(join(home, 'secrets.key'));
    await expect(boot()).rejects.toThrow(/No secrets key on this machine .*secrets_key/);
    expect(readdirSync(home)).not.toContain('secrets.key');
  });
});
