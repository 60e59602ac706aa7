import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `jobs.environment_id`: the spec's `environment.id`, so that GET /v1/jobs can show it without reading
 * the spec column (the largest one). Existing rows are filled from their stored spec (JSON text).
 */
export class JobEnvironment1765200000000 implements MigrationInterface {
  name = 'JobEnvironment1765200000000';

  async up(q: QueryRunner): Promise<void> {
    // A nullable column without a default: a plain ALTER on both databases (no SQLite table rebuild).
    await q.query('ALTER TABLE "jobs" ADD COLUMN "environment_id" varchar(128)');
    if (q.connection.driver.options.type === 'postgres') {
      // ->> on a non-object (or a missing key) is NULL, so specs without an environment stay NULL.
      await q.query(`UPDATE "jobs" SET "environment_id" = ("spec"::jsonb -> 'environment' ->> 'id')`);
    } else {
      await q.query(`UPDATE "jobs" SET "environment_id" = json_extract("spec", '$.environment.id') WHERE json_valid("spec")`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "jobs" DROP COLUMN "environment_id"');
  }
}
