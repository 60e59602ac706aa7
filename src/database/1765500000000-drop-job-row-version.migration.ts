import { MigrationInterface, QueryRunner } from 'typeorm';
import { JobRowVersion1765300000000 } from './1765300000000-job-row-version.migration';

/**
 * Drops `jobs.row_version` and its trigger (migration `JobRowVersion1765300000000`): they served a
 * per-job JSON cache of the job list's reader threads, which the list no longer has. On SQLite the
 * trigger was a second UPDATE of the row for every update of a job.
 */
export class DropJobRowVersion1765500000000 implements MigrationInterface {
  name = 'DropJobRowVersion1765500000000';

  async up(q: QueryRunner): Promise<void> {
    if (q.connection.driver.options.type === 'postgres') {
      await q.query('DROP TRIGGER "trg_jobs_row_version" ON "jobs"');
      await q.query('DROP FUNCTION "opentinker_jobs_row_version"()');
    } else {
      await q.query('DROP TRIGGER "trg_jobs_row_version"');
    }
    await q.query('ALTER TABLE "jobs" DROP COLUMN "row_version"');
  }

  async down(q: QueryRunner): Promise<void> {
    await new JobRowVersion1765300000000().up(q);
  }
}
