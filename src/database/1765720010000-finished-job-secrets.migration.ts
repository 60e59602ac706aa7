import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Job secrets live only as long as their job can still run (src/jobs/jobs.repository.ts deletes them
 * when it ends): those of jobs that ended before that rule are deleted here. What remains is encrypted
 * at start with the server's key (`sealStoredSecrets`), which a migration does not hold.
 */
export class FinishedJobSecrets1765720010000 implements MigrationInterface {
  name = 'FinishedJobSecrets1765720010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "job_secrets" WHERE "job_id" IN (SELECT "id" FROM "jobs" WHERE "state" IN ('succeeded', 'failed', 'cancelled'))`);
  }

  async down(): Promise<void> {
    // Deleted secrets cannot come back.
  }
}
