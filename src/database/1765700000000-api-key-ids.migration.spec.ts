import { testDatabases, withMigrations, type TestDatabase } from '../../test/support/test-databases';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { MIGRATIONS } from './data-source';
import { ApiKeyIds1765700000000 } from './1765700000000-api-key-ids.migration';

const BEFORE = MIGRATIONS.filter((m) => m !== ApiKeyIds1765700000000);

/** On SQLite, and on PostgreSQL when `IT_PG_URL` names a server (the integration run). */
describe.each(testDatabases('api-key-ids'))('migration ApiKeyIds1765700000000 on %s', (_name, open) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
  });
  afterEach(() => database.drop());

  it('gives keys issued before ids the 8 characters after otk_ their prefix shows, and operator keys stored with scrypt none', async () => {
    await withMigrations(database, BEFORE, async (db) => {
      await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'user', 1)`);
      await db.query(
        `INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at) VALUES
           ('generated', 'u1', 'a', 'otk_Ab3-_x9Z', '${'a'.repeat(64)}', 1),
           ('operator', 'u1', 'b', 'otk_…', 's:0123456789abcdef:${'A'.repeat(43)}=', 1),
           ('operator-sha256', 'u1', 'c', 'otk_my_admin', '${'b'.repeat(64)}', 1)`,
      );
    });
    const rows = await withMigrations(database, MIGRATIONS, (db) => db.query('SELECT id, key_id FROM api_keys'));
    expect(Object.fromEntries(rows.map((r: { id: string; key_id: unknown }) => [r.id, r.key_id]))).toEqual({
      generated: 'Ab3-_x9Z',
      operator: null,
      // An operator key from before scrypt: found by its id until `serve` with it configured stores it with scrypt (and drops the id).
      'operator-sha256': 'my_admin',
    });
  });

  it('gives the api_keys table every column the entity maps, and goes back down', async () => {
    const [columns, mapped] = await withMigrations(database, MIGRATIONS, async (db) => {
      const sql =
        database.options.type === 'postgres'
          ? `SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'api_keys'`
          : `SELECT name FROM pragma_table_info('api_keys')`;
      const found = (await db.query(sql)).map((c: { name: string }) => c.name).sort();
      await db.undoLastMigration({ transaction: 'all' });
      return [
        found,
        db
          .getMetadata(ApiKeyEntity)
          .columns.map((c) => c.databaseName)
          .sort(),
      ];
    });
    expect(columns).toEqual(mapped);
  });
});
