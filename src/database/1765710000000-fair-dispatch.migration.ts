import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fair-share dispatch. `jobs.admin_priority` is the part of a job's priority that counts across users
 * (set only when an admin gave a priority above `max_user_priority`; 0 otherwise). `idx_jobs_dispatch`
 * holds queued jobs only (partial), in the order a user's own queued jobs start, per owner, so a worker
 * finds the owners with queued jobs (a skip scan) and each owner's first job (one index seek) without
 * reading the rest of the queue or any finished job; being partial, it is also the index PostgreSQL's
 * planner takes for those lookups whatever the table's statistics say.
 * `idx_jobs_owner_started` finds when a user's last job started (one seek; queued jobs, which have no
 * start, are left out of it), the tie-break between users holding the same.
 * `workers.model_server_devices` lists the devices the API's model servers hold on that worker's
 * machine, so `GET /v1/devices` shows them.
 */
export class FairDispatch1765710000000 implements MigrationInterface {
  name = 'FairDispatch1765710000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "jobs" ADD COLUMN "admin_priority" integer NOT NULL DEFAULT 0');
    await q.query(`CREATE INDEX "idx_jobs_dispatch" ON "jobs" ("owner_id", "admin_priority" DESC, "priority" DESC, "created_at", "id") WHERE "state" = 'queued'`);
    await q.query('CREATE INDEX "idx_jobs_owner_started" ON "jobs" ("owner_id", "started_at") WHERE "started_at" IS NOT NULL');
    await q.query('ALTER TABLE "workers" ADD COLUMN "model_server_devices" text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "workers" DROP COLUMN "model_server_devices"');
    await q.query('DROP INDEX "idx_jobs_owner_started"');
    await q.query('DROP INDEX "idx_jobs_dispatch"');
    await q.query('ALTER TABLE "jobs" DROP COLUMN "admin_priority"');
  }
}
