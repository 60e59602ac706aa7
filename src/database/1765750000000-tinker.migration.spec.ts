import { testDatabases, withMigrations, type TestDatabase } from '../../test/support/test-databases';
import { TinkerModelEntity } from '../tinker/tinker-model.entity';
import { TinkerRunnerEntity } from '../tinker/tinker-runner.entity';
import { TinkerSamplerEntity } from '../tinker/tinker-sampler.entity';
import { TinkerSessionEntity } from '../tinker/tinker-session.entity';
import { MIGRATIONS } from './data-source';

const TABLES = { tinker_sessions: TinkerSessionEntity, tinker_runners: TinkerRunnerEntity, tinker_models: TinkerModelEntity, tinker_samplers: TinkerSamplerEntity };

/** On SQLite, and on PostgreSQL when `IT_PG_URL` names a server (the integration run). */
describe.each(testDatabases('tinker-migration'))('migration Tinker1765750000000 on %s', (_name, open) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
  });
  afterEach(() => database.drop());

  it('gives each Tinker table every column its entity maps, and goes back down', async () => {
    await withMigrations(database, MIGRATIONS, async (db) => {
      for (const [table, entity] of Object.entries(TABLES)) {
        const sql =
          database.options.type === 'postgres'
            ? `SELECT column_name AS name FROM information_schema.columns WHERE table_name = '${table}'`
            : `SELECT name FROM pragma_table_info('${table}')`;
        const found = (await db.query(sql)).map((c: { name: string }) => c.name).sort();
        expect([table, found]).toEqual([
          table,
          db
            .getMetadata(entity)
            .columns.map((c) => c.databaseName)
            .sort(),
        ]);
      }
      await db.undoLastMigration({ transaction: 'all' });
      const runner = db.createQueryRunner();
      try {
        for (const table of Object.keys(TABLES)) expect(await runner.hasTable(table)).toBe(false);
      } finally {
        await runner.release();
      }
    });
  });
});
