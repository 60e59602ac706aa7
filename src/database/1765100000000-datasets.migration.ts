import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Uploaded datasets (the files themselves live under `<home>/datasets/<id>/`). Schema builder: SQLite and PostgreSQL. */
export class Datasets1765100000000 implements MigrationInterface {
  name = 'Datasets1765100000000';

  async up(q: QueryRunner): Promise<void> {
    const str = (name: string, length: number) => ({ name, type: 'varchar', length: String(length) });
    await q.createTable(
      new Table({
        name: 'datasets',
        columns: [
          { ...str('id', 36), isPrimary: true },
          str('owner_id', 36),
          str('name', 128),
          str('environment_id', 128),
          str('format', 16),
          { name: 'row_count', type: 'integer' },
          { name: 'invalid_row_count', type: 'integer' },
          { name: 'bad_rows', type: 'text' },
          { name: 'bytes', type: 'bigint' },
          { name: 'column_names', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
        indices: [
          new TableIndex({ name: 'idx_datasets_owner', columnNames: ['owner_id', 'created_at', 'id'] }),
          new TableIndex({ name: 'idx_datasets_created', columnNames: ['created_at', 'id'] }),
        ],
        foreignKeys: [{ columnNames: ['owner_id'], referencedTableName: 'users', referencedColumnNames: ['id'] }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('datasets');
  }
}
