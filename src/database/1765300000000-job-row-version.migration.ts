import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `jobs.row_version`: a counter the database itself raises on every UPDATE of a job row, whatever
 * statement or process made it. The job list's reader threads kept each job's JSON by (id, row_version)
 * and reused it while the row's version was unchanged, so the counter must not depend on the
 * application remembering to bump it: a trigger does it. Dropped again by `DropJobRowVersion1765500000000`.
 *
 * SQLite: an AFTER UPDATE trigger that updates the row's counter. SQLite's recursive triggers are off
 * (the default; nothing here turns them on), so that inner UPDATE does not fire the trigger again, and
 * `changes()` — which the conditional state transitions read — counts only the outer statement's rows.
 * PostgreSQL: a BEFORE UPDATE trigger that sets the new row's counter.
 */
export class JobRowVersion1765300000000 implements MigrationInterface {
  name = 'JobRowVersion1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "jobs" ADD COLUMN "row_version" integer NOT NULL DEFAULT 0');
    if (q.connection.driver.options.type === 'postgres') {
      await q.query(`CREATE FUNCTION "opentinker_jobs_row_version"() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW."row_version" := OLD."row_version" + 1; RETURN NEW; END $$`);
      await q.query(`CREATE TRIGGER "trg_jobs_row_version" BEFORE UPDATE ON "jobs" FOR EACH ROW EXECUTE FUNCTION "opentinker_jobs_row_version"()`);
    } else {
      await q.query(`CREATE TRIGGER "trg_jobs_row_version" AFTER UPDATE ON "jobs" FOR EACH ROW
        BEGIN UPDATE "jobs" SET "row_version" = OLD."row_version" + 1 WHERE "id" = OLD."id"; END`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.driver.options.type === 'postgres') {
      await q.query('DROP TRIGGER "trg_jobs_row_version" ON "jobs"');
      await q.query('DROP FUNCTION "opentinker_jobs_row_version"()');
    } else {
      await q.query('DROP TRIGGER "trg_jobs_row_version"');
    }
    await q.query('ALTER TABLE "jobs" DROP COLUMN "row_version"');
  }
}
