import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * `hub_access`: which user's jobs used which Hub snapshot, how (without a token, with their own token,
 * with the operator's), and the bytes they downloaded for it (src/hub/hub-access.entity.ts).
 */
export class HubAccess1765720000000 implements MigrationInterface {
  name = 'HubAccess1765720000000';

  async up(q: QueryRunner): Promise<void> {
    const str = (name: string, length: number) => ({ name, type: 'varchar', length: String(length) });
    await q.createTable(
      new Table({
        name: 'hub_access',
        columns: [
          { ...str('repo_type', 8), isPrimary: true },
          { ...str('repo', 200), isPrimary: true },
          { ...str('commit', 40), isPrimary: true },
          { ...str('user_id', 36), isPrimary: true },
          str('access', 16),
          { name: 'downloaded_bytes', type: 'bigint' },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
        indices: [new TableIndex({ name: 'idx_hub_access_user', columnNames: ['user_id'] })],
        foreignKeys: [{ columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('hub_access');
  }
}
