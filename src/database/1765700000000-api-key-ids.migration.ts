import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `api_keys.key_id`: the non-secret id a key carries, which finds the one row to verify. Keys issued
 * before ids are found by the 8 characters after `otk_`, which their `prefix` already showed, so they
 * get those as their id. Keys stored with scrypt (an operator chose them) get none: their text stays
 * unstored, and a process recognises them once it has verified them (see `AuthService`).
 */
export class ApiKeyIds1765700000000 implements MigrationInterface {
  name = 'ApiKeyIds1765700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE "api_keys" ADD COLUMN "key_id" varchar(16)');
    await q.query(`UPDATE "api_keys" SET "key_id" = substr("prefix", 5, 8) WHERE substr("hash", 1, 2) <> 's:' AND substr("prefix", 1, 4) = 'otk_' AND length("prefix") = 12`);
    await q.query('CREATE INDEX "idx_api_keys_key_id" ON "api_keys" ("key_id")');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX "idx_api_keys_key_id"');
    await q.query('ALTER TABLE "api_keys" DROP COLUMN "key_id"');
  }
}
