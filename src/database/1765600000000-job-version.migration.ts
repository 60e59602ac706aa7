import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `jobs.version`: a counter that every UPDATE of a job row raises (`NEXT_VERSION`, written by the two
 * repositories that update jobs rows; no trigger). The job list keeps each job's JSON by (id, version).
 */
export class JobVersion1765600000000 implements MigrationInterface {
  name = 'JobVersion1765600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "jobs" ADD COLUMN "version" integer NOT NULL DEFAULT 0');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "jobs" DROP COLUMN "version"');
  }
}
