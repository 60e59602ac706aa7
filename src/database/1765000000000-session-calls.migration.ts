import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Calls of client-driven training sessions (`session` jobs), keyed by the client's call id. */
export class SessionCalls1765000000000 implements MigrationInterface {
  name = 'SessionCalls1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'session_calls',
        columns: [
          { name: 'id', type: 'integer', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'job_id', type: 'varchar', length: '36' },
          { name: 'call_id', type: 'varchar', length: '128' },
          { name: 'op', type: 'varchar', length: '32' },
          { name: 'args', type: 'text' },
          { name: 'state', type: 'varchar', length: '16' },
          { name: 'result', type: 'text', isNullable: true },
          { name: 'error', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'started_at', type: 'bigint', isNullable: true },
          { name: 'finished_at', type: 'bigint', isNullable: true },
        ],
        indices: [new TableIndex({ name: 'idx_session_calls_call', columnNames: ['job_id', 'call_id'], isUnique: true })],
        foreignKeys: [{ columnNames: ['job_id'], referencedTableName: 'jobs', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('session_calls');
  }
}
