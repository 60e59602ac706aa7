import type { DataSource } from 'typeorm';
import { jobRow, jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import type { AppConfig } from '../config/app-config';
import { JobsRepository } from './jobs.repository';

/** A job's secrets in the database: sealed, read back for its runner, kept while it may run again, gone when it ends. */
describe.each(testDatabases('job-secrets-store'))('JobsRepository secrets (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;

  beforeAll(async () => {
    database = await open();
    ({ db } = await jobsFixture(database));
    const config = { usesPostgres: database.options.type === 'postgres', values: { lease_seconds: 30, secrets_key: '5a'.repeat(32) } } as unknown as AppConfig;
    repo = new JobsRepository(db, config);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('keeps a re-queued job’s secrets for its next run and deletes them when it ends', async () => {
    const id = '00000000-0000-4000-8000-0000000000b1';
    await repo.insert(jobRow(id, 1_765_000_000_000, { kind: 'train', spec: { kind: 'train', environment: { id: 'math' } }, maxAttempts: 3 }), {
      'environment.token': 'env-s3cret',
      'trainer.wandb.api_key': 'wb-s3cret',
    });
    const stored: Array<{ value: string }> = await db.query('SELECT value FROM job_secrets');
    expect(stored.map((r) => r.value).join(' ')).not.toMatch(/s3cret/);
    const secrets = { 'environment.token': 'env-s3cret', 'trainer.wandb.api_key': 'wb-s3cret' };
    expect(await repo.secretsOf(id)).toEqual(secrets);

    const entity = async () => (await repo.findById(id))!;
    expect(await repo.claim(await entity(), 'w1', ['cpu:0'], 5)).toBe('claimed');
    expect(await repo.requeue(await entity(), 'worker lost; the job will resume', { countAttempt: true })).toBe(true);
    expect(await repo.secretsOf(id)).toEqual(secrets);
    expect(await repo.claim(await entity(), 'w2', ['cpu:0'], 5)).toBe('claimed');
    expect(await repo.finish(id, 'w2', 'failed', { error: 'boom' })).toBe(true);
    expect(await repo.secretsOf(id)).toEqual({});
    expect(await db.query('SELECT job_id FROM job_secrets')).toEqual([]);
  });
});
