import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { ENTITIES, MIGRATIONS } from './data-source';
import { ApiKeyIds1765700000000 } from './1765700000000-api-key-ids.migration';

/** On SQLite; PostgreSQL runs the same migration in the integration tests' database. */
describe('migration ApiKeyIds1765700000000', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'api-key-ids-migration-'));
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

  it('gives keys issued before ids the 8 characters after otk_ their prefix shows, and operator keys stored with scrypt none', async () => {
    await withDatabase(
      MIGRATIONS.filter((m) => m !== ApiKeyIds1765700000000),
      async (db) => {
        await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'user', 1)`);
        const keys: [string, string, string][] = [
          ['generated', 'otk_Ab3-_x9Z', 'a'.repeat(64)],
          ['operator', 'otk_…', 's:0123456789abcdef:' + 'A'.repeat(43) + '='],
          ['operator-sha256', 'otk_my_admin', 'b'.repeat(64)],
        ];
        for (const [id, prefix, hash] of keys) {
          await db.query(`INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at) VALUES (?, 'u1', ?, ?, ?, 1)`, [id, id, prefix, hash]);
        }
      },
    );
    const rows = await withDatabase(MIGRATIONS, (db) => db.query('SELECT id, key_id FROM api_keys'));
    expect(Object.fromEntries(rows.map((r: { id: string; key_id: unknown }) => [r.id, r.key_id]))).toEqual({
      generated: 'Ab3-_x9Z',
      operator: null,
      // An operator key from before scrypt: found by its id until `serve` with it configured stores it with scrypt (and drops the id).
      'operator-sha256': 'my_admin',
    });
  });

  it('gives the api_keys table every column the entity maps', async () => {
    const [columns, mapped] = await withDatabase(MIGRATIONS, async (db) => [
      (await db.query('PRAGMA table_info("api_keys")')).map((c: { name: string }) => c.name).sort(),
      db
        .getMetadata(ApiKeyEntity)
        .columns.map((c) => c.databaseName)
        .sort(),
    ]);
    expect(columns).toEqual(mapped);
  });
});
