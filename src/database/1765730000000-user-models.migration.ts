import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Model folders users upload (`model:<id>`; the files live under `<home>/models/<id>/`). Schema builder: SQLite and PostgreSQL. */
export class UserModels1765730000000 implements MigrationInterface {
  name = 'UserModels1765730000000';

  async up(q: QueryRunner): Promise<void> {
    const str = (name: string, length: number) => ({ name, type: 'varchar', length: String(length) });
    await q.createTable(
      new Table({
        name: 'models',
        columns: [
          { ...str('id', 36), isPrimary: true },
          str('owner_id', 36),
          str('name', 128),
          str('model_type', 64),
          { name: 'bytes', type: 'bigint' },
          str('content_sha256', 64),
          { name: 'files', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [
          new TableIndex({ name: 'idx_models_owner', columnNames: ['owner_id', 'created_at', 'id'] }),
          new TableIndex({ name: 'idx_models_owner_content', columnNames: ['owner_id', 'content_sha256'] }),
        ],
        foreignKeys: [{ columnNames: ['owner_id'], referencedTableName: 'users', referencedColumnNames: ['id'] }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('models');
  }
}
