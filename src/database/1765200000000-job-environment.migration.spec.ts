import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { JobEntity } from '../jobs/job.entity';
import { ENTITIES, MIGRATIONS } from './data-source';
import { JobEnvironment1765200000000 } from './1765200000000-job-environment.migration';

/** On SQLite; PostgreSQL runs the same migration in the integration tests' database. */
describe('migration JobEnvironment1765200000000', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'job-environment-migration-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function withDatabase<T>(migrations: typeof MIGRATIONS, use: (db: DataSource) => Promise<T>): Promise<T> {
    const db = new DataSource({ type: 'better-sqlite3', database: join(dir, 'db.sqlite'), entities: ENTITIES, migrations, logging: false });
    await db.initialize();
    try {
      await db.runMigrations({ transaction: 'all' });
      return await use(db);
    } finally {
      await db.destroy();
    }
  }

  it('fills environment_id of existing jobs from their stored spec', async () => {
    await withDatabase(
      MIGRATIONS.filter((m) => m !== JobEnvironment1765200000000),
      async (db) => {
        await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'user', 1)`);
        const jobs: [string, string][] = [
          ['train', JSON.stringify({ kind: 'train', environment: { id: 'math', config: {}, url: 'http://h:8088' } })],
          ['sleep', JSON.stringify({ kind: 'sleep', steps: 1 })],
          ['odd', JSON.stringify({ kind: 'x', environment: 'math' })],
          ['broken', 'not json'],
        ];
        for (const [id, spec] of jobs) {
          await db.query(
            `INSERT INTO jobs (id, owner_id, kind, state, priority, spec, resources, attempts, max_attempts, created_at, updated_at)
             VALUES (?, 'u1', 'x', 'queued', 0, ?, '{}', 0, 1, 1, 1)`,
            [id, spec],
          );
        }
      },
    );
    const rows = await withDatabase(MIGRATIONS, (db) => db.query('SELECT id, environment_id FROM jobs'));
    expect(Object.fromEntries(rows.map((r: { id: string; environment_id: unknown }) => [r.id, r.environment_id]))).toEqual({
      train: 'math',
      sleep: null,
      odd: null,
      broken: null,
    });
  });

  it('gives the jobs table every column the entity maps', async () => {
    const [columns, mapped] = await withDatabase(MIGRATIONS, async (db) => [
      (await db.query('PRAGMA table_info("jobs")')).map((c: { name: string }) => c.name).sort(),
      db
        .getMetadata(JobEntity)
        .columns.map((c) => c.databaseName)
        .sort(),
    ]);
    expect(columns).toEqual(mapped);
    expect(columns).toContain('environment_id');
  });
});
