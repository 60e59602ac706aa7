import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/** Secrets of job specs (a remote environment's token), kept out of `jobs.spec`, which tenants and listings read. */
export class JobSecrets1765400000000 implements MigrationInterface {
  name = 'JobSecrets1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'job_secrets',
        columns: [
          { name: 'job_id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'path', type: 'varchar', length: '128', isPrimary: true },
          { name: 'value', type: 'text' },
        ],
        foreignKeys: [{ columnNames: ['job_id'], referencedTableName: 'jobs', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('job_secrets');
  }
}
