import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Tinker SDK sessions, their runner jobs, training clients and samplers. Schema builder: SQLite and PostgreSQL. */
export class Tinker1765750000000 implements MigrationInterface {
  name = 'Tinker1765750000000';

  async up(q: QueryRunner): Promise<void> {
    const str = (name: string, length: number, nullable = false) => ({ name, type: 'varchar', length: String(length), isNullable: nullable });
    const ms = (name: string, nullable = false) => ({ name, type: 'bigint', isNullable: nullable });
    const owner = { columnNames: ['owner_id'], referencedTableName: 'users', referencedColumnNames: ['id'] };
    const job = { columnNames: ['job_id'], referencedTableName: 'jobs', referencedColumnNames: ['id'], onDelete: 'CASCADE' };
    await q.createTable(
      new Table({
        name: 'tinker_sessions',
        columns: [
          { ...str('id', 36), isPrimary: true },
          str('owner_id', 36),
          str('state', 16),
          str('sdk_version', 64),
          { name: 'tags', type: 'text' },
          { name: 'user_metadata', type: 'text', isNullable: true },
          str('idempotency_key', 200, true),
          ms('created_at'),
          ms('heartbeat_at'),
          ms('ended_at', true),
          { name: 'end_reason', type: 'text', isNullable: true },
        ],
        indices: [
          new TableIndex({ name: 'idx_tinker_sessions_owner', columnNames: ['owner_id', 'state'] }),
          new TableIndex({ name: 'idx_tinker_sessions_heartbeat', columnNames: ['state', 'heartbeat_at'] }),
        ],
        foreignKeys: [owner],
      }),
    );
    await q.createTable(
      new Table({
        name: 'tinker_runners',
        columns: [{ ...str('job_id', 36), isPrimary: true }, str('session_id', 36), str('owner_id', 36), str('base_key', 600), ms('created_at')],
        indices: [new TableIndex({ name: 'idx_tinker_runners_session', columnNames: ['session_id', 'base_key'] })],
        foreignKeys: [job, owner],
      }),
    );
    await q.createTable(
      new Table({
        name: 'tinker_models',
        columns: [
          { ...str('id', 128), isPrimary: true },
          str('session_id', 36),
          str('owner_id', 36),
          str('job_id', 36),
          { name: 'seq', type: 'integer' },
          str('base_model', 512),
          { name: 'lora_rank', type: 'integer' },
          { name: 'lora', type: 'text' },
          { name: 'loaded_from', type: 'text', isNullable: true },
          { name: 'user_metadata', type: 'text', isNullable: true },
          ms('created_at'),
          ms('last_request_at'),
        ],
        indices: [
          new TableIndex({ name: 'idx_tinker_models_owner', columnNames: ['owner_id', 'created_at'] }),
          new TableIndex({ name: 'idx_tinker_models_session', columnNames: ['session_id'] }),
        ],
        foreignKeys: [job, owner],
      }),
    );
    await q.createTable(
      new Table({
        name: 'tinker_samplers',
        columns: [
          { ...str('id', 128), isPrimary: true },
          str('session_id', 36),
          str('owner_id', 36),
          str('job_id', 36),
          { name: 'seq', type: 'integer' },
          str('base_model', 512),
          { name: 'model_path', type: 'text', isNullable: true },
          str('source_model_id', 128, true),
          ms('created_at'),
        ],
        indices: [new TableIndex({ name: 'idx_tinker_samplers_session', columnNames: ['session_id'] })],
        foreignKeys: [job, owner],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['tinker_samplers', 'tinker_models', 'tinker_runners', 'tinker_sessions']) await q.dropTable(table);
  }
}
