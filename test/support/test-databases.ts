import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../../src/config/app-config';
import { ENTITIES, MIGRATIONS } from '../../src/database/data-source';
import { JobEntity } from '../../src/jobs/job.entity';
import { JobsRepository } from '../../src/jobs/jobs.repository';

/** A throw-away database and how to remove it. */
export interface TestDatabase {
  options: DataSourceOptions;
  drop(): Promise<void>;
}

/**
 * The databases a spec runs against: SQLite always, PostgreSQL too when `IT_PG_URL` names a server (as
 * in the integration run). Each entry opens a fresh, empty database; `drop` removes it.
 */
export function testDatabases(prefix: string): [string, () => Promise<TestDatabase>][] {
  const databases: [string, () => Promise<TestDatabase>][] = [
    [
      'SQLite',
      async () => {
        const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
        return { options: { type: 'better-sqlite3', database: join(dir, 'db.sqlite') }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
      },
    ],
  ];
  const pgUrl = process.env.IT_PG_URL;
  if (pgUrl) {
    databases.push([
      'PostgreSQL',
      async () => {
        const name = `opentinker_${prefix.replace(/\W/g, '_')}_${process.pid}_${Date.now()}`;
        const admin = async (sql: string) => {
          const c = new Client({ connectionString: pgUrl });
          await c.connect();
          try {
            await c.query(sql);
          } finally {
            await c.end();
          }
        };
        await admin(`CREATE DATABASE ${name}`);
        const url = new URL(pgUrl);
        url.pathname = `/${name}`;
        return { options: { type: 'postgres', url: url.toString() }, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
      },
    ]);
  }
  return databases;
}

/** The database migrated, with users `u1` (alice) and `u2` (bob), and a jobs repository on it. */
export async function jobsFixture(database: TestDatabase): Promise<{ db: DataSource; repo: JobsRepository }> {
  const db = new DataSource({ ...database.options, entities: ENTITIES, migrations: MIGRATIONS, logging: false } as DataSourceOptions);
  await db.initialize();
  await db.runMigrations({ transaction: 'all' });
  await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'user', 1), ('u2', 'bob', 'user', 1)`);
  return { db, repo: new JobsRepository(db, { usesPostgres: database.options.type === 'postgres', values: { lease_seconds: 30 } } as AppConfig) };
}

/** Opens the database, runs these migrations on it, and hands it to `use` (closed afterwards). */
export async function withMigrations<T>(database: TestDatabase, migrations: typeof MIGRATIONS, use: (db: DataSource) => Promise<T>): Promise<T> {
  const db = new DataSource({ ...database.options, entities: ENTITIES, migrations, logging: false } as DataSourceOptions);
  await db.initialize();
  try {
    await db.runMigrations({ transaction: 'all' });
    return await use(db);
  } finally {
    await db.destroy();
  }
}

/** A queued `sleep` job of `u1` created at `createdAt`, with `over` applied: a row for repository specs. */
export function jobRow(id: string, createdAt: number, over: Partial<JobEntity> = {}): JobEntity {
  return Object.assign(new JobEntity(), {
    id,
    ownerId: 'u1',
    kind: 'sleep',
    name: null,
    state: 'queued',
    priority: 0,
    adminPriority: 0,
    environmentId: null,
    spec: { kind: 'sleep', steps: 1 },
    resources: { gpus: 0, cpu_slots: 1 },
    devices: null,
    workerId: null,
    attempts: 0,
    maxAttempts: 1,
    error: null,
    exitCode: null,
    progress: null,
    resumeState: null,
    cancelRequestedAt: null,
    leaseExpiresAt: null,
    createdAt,
    startedAt: null,
    finishedAt: null,
    updatedAt: createdAt,
    ...over,
  });
}
