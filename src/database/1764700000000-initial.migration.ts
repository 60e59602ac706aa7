import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import type { TableColumnOptions } from 'typeorm/schema-builder/options/TableColumnOptions.js';

/** Written with TypeORM's schema builder, not SQL, so one migration serves SQLite and PostgreSQL. */
export class Initial1764700000000 implements MigrationInterface {
  name = 'Initial1764700000000';

  async up(q: QueryRunner): Promise<void> {
    const id = (length = 36) => ({ name: 'id', type: 'varchar', length: String(length), isPrimary: true });
    const serial = { name: 'id', type: 'integer', isPrimary: true, isGenerated: true, generationStrategy: 'increment' as const };
    const ms = (name: string, nullable = false) => ({ name, type: 'bigint', isNullable: nullable });
    const str = (name: string, length: number, nullable = false) => ({ name, type: 'varchar', length: String(length), isNullable: nullable });
    const text = (name: string, nullable = false) => ({ name, type: 'text', isNullable: nullable });
    const int = (name: string, nullable = false) => ({ name, type: 'integer', isNullable: nullable });

    await q.createTable(
      new Table({
        name: 'users',
        columns: [id(), { ...str('name', 64), isUnique: true }, str('role', 16), ms('created_at')],
      }),
    );
    await q.createTable(
      new Table({
        name: 'api_keys',
        columns: [
          id(),
          str('user_id', 36),
          str('name', 100),
          str('prefix', 16),
          { ...str('hash', 64), isUnique: true },
          ms('created_at'),
          ms('last_used_at', true),
          ms('revoked_at', true),
        ],
        indices: [new TableIndex({ columnNames: ['user_id'] })],
        foreignKeys: [{ columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
    await q.createTable(
      new Table({
        name: 'jobs',
        columns: [
          id(),
          str('owner_id', 36),
          str('kind', 32),
          str('name', 128, true),
          str('state', 16),
          int('priority'),
          text('spec'),
          text('resources'),
          text('devices', true),
          str('worker_id', 64, true),
          int('attempts'),
          int('max_attempts'),
          text('error', true),
          int('exit_code', true),
          text('progress', true),
          text('resume_state', true),
          ms('cancel_requested_at', true),
          ms('lease_expires_at', true),
          ms('created_at'),
          ms('started_at', true),
          ms('finished_at', true),
          ms('updated_at'),
        ],
        indices: [
          new TableIndex({ name: 'idx_jobs_queue', columnNames: ['state', 'priority', 'created_at'] }),
          new TableIndex({ name: 'idx_jobs_owner', columnNames: ['owner_id', 'created_at'] }),
          new TableIndex({ columnNames: ['worker_id'] }),
        ],
        foreignKeys: [{ columnNames: ['owner_id'], referencedTableName: 'users', referencedColumnNames: ['id'] }],
      }),
    );
    const jobChild = (name: string, columns: TableColumnOptions[], indices: TableIndex[]) =>
      new Table({
        name,
        columns: [serial, str('job_id', 36), ...columns],
        indices,
        foreignKeys: [{ columnNames: ['job_id'], referencedTableName: 'jobs', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      });
    await q.createTable(jobChild('job_events', [str('type', 16), text('data'), ms('created_at')], [new TableIndex({ name: 'idx_job_events_job', columnNames: ['job_id', 'id'] })]));
    await q.createTable(
      jobChild(
        'job_metrics',
        [int('step'), str('name', 128), { name: 'value', type: 'double precision' }, ms('created_at')],
        [new TableIndex({ name: 'idx_job_metrics_job', columnNames: ['job_id', 'name', 'step'] })],
      ),
    );
    await q.createTable(
      jobChild(
        'job_artifacts',
        [str('name', 255), text('path'), str('worker_id', 64, true), ms('size'), ms('created_at')],
        [new TableIndex({ name: 'idx_job_artifacts_name', columnNames: ['job_id', 'name'], isUnique: true })],
      ),
    );
    await q.createTable(
      new Table({
        name: 'workers',
        columns: [id(64), str('hostname', 255), int('pid'), text('devices'), ms('started_at'), ms('last_seen_at'), ms('stopped_at', true)],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['workers', 'job_artifacts', 'job_metrics', 'job_events', 'jobs', 'api_keys', 'users']) {
      await q.dropTable(table);
    }
  }
}
