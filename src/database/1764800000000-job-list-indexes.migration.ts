import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * GET /v1/jobs lists newest first (ORDER BY created_at DESC, id DESC LIMIT n). Without an index on that
 * order the database reads and sorts every job row for each page (admins see all jobs); with these it
 * reads only the rows of the page.
 */
export class JobListIndexes1764800000000 implements MigrationInterface {
  name = 'JobListIndexes1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createIndex('jobs', new TableIndex({ name: 'idx_jobs_created', columnNames: ['created_at', 'id'] }));
    await q.dropIndex('jobs', 'idx_jobs_owner');
    await q.createIndex('jobs', new TableIndex({ name: 'idx_jobs_owner', columnNames: ['owner_id', 'created_at', 'id'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('jobs', 'idx_jobs_owner');
    await q.createIndex('jobs', new TableIndex({ name: 'idx_jobs_owner', columnNames: ['owner_id', 'created_at'] }));
    await q.dropIndex('jobs', 'idx_jobs_created');
  }
}
