import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { DataSourceOptions } from 'typeorm';

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
