import type { DataSource } from 'typeorm';
import { jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { JobEventsRepository } from './job-events.repository';
import { JobListSql, type JobListQuery, type PgPool, type SqliteDatabase } from './job-list.sql';
import { serializeJobPage } from './job-page.serializer';
import { JobPageWriter } from './job-page.writer';
import { JobEntity, type JobProgress } from './job.entity';
import { JobsRepository } from './jobs.repository';

const T = 1_764_700_000_000;
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const job = (n: number): JobEntity =>
  Object.assign(new JobEntity(), {
    id: id(n), ownerId: n % 2 ? 'u1' : 'u2', kind: n % 3 ? 'sleep' : 'train', name: `job ${n}`, state: 'queued', priority: 0,
    environmentId: null, spec: { kind: 'sleep', steps: 1 }, resources: { gpus: 0, cpu_slots: 1 }, devices: null, workerId: null,
    attempts: 0, maxAttempts: 2, error: null, exitCode: null, progress: null, resumeState: null, cancelRequestedAt: null,
    leaseExpiresAt: null, createdAt: T + n, startedAt: null, finishedAt: null, updatedAt: T + n,
  });

describe.each(testDatabases('job-page-writer'))('JobPageWriter (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;
  let sql: JobListSql;
  let writer: JobPageWriter;
  let fullReads: string[][];

  /** What the API thread writes for the same page: the rows read in full, no JSON kept. */
  const expected = async (q: JobListQuery, page = 1) => serializeJobPage({ ...(await repo.list(q)), page, limit: q.limit });
  const read = async (q: JobListQuery, page = 1) => (await writer.page(q, page, q.limit)).toString('utf8');
  const all: JobListQuery = { limit: 50, offset: 0 };
  /** A running job's progress, written as the supervisor writes it (with the job's output batch). */
  const progress = (jobId: string, p: JobProgress) => new JobEventsRepository(db).appendOutput(jobId, { progress: p, events: [{ type: 'progress', data: p }] });

  beforeAll(async () => {
    database = await open();
    ({ db, repo } = await jobsFixture(database));
    for (let n = 1; n <= 12; n++) await repo.insert(job(n));
  });
  beforeEach(() => {
    // Its own connection handle, as a reader thread has (the API's driver connection here).
    const driver = db.driver as unknown as { master: PgPool; databaseConnection: SqliteDatabase };
    sql = new JobListSql(database.options.type === 'postgres' ? { pg: driver.master } : { sqlite: driver.databaseConnection });
    fullReads = [];
    const summaries = sql.summaries.bind(sql);
    sql.summaries = (ids) => (fullReads.push([...ids]), summaries(ids));
    writer = new JobPageWriter(sql);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('writes the bytes of serializeJobPage for filters, pages and a page past the end', async () => {
    const queries: [JobListQuery, number][] = [
      [all, 1],
      [{ ownerId: 'u1', limit: 2, offset: 2 }, 2],
      [{ states: ['queued', 'queued'], kind: 'train', limit: 3, offset: 0 }, 1],
      [{ ownerId: 'u2', kind: 'nope', limit: 10, offset: 0 }, 1],
      [{ limit: 10, offset: 40 }, 5],
    ];
    for (const [q, page] of queries) expect(await read(q, page)).toBe(await expected(q, page));
  });

  it('reads a job in full once, and again only after its row changed', async () => {
    await read(all);
    expect(fullReads).toEqual([[...Array(12)].map((_, i) => id(12 - i))]);
    expect(writer.size).toBe(12);

    // Another page with the same jobs: nothing read in full.
    expect(await read({ ownerId: 'u1', limit: 3, offset: 1 })).toBe(await expected({ ownerId: 'u1', limit: 3, offset: 1 }));
    expect(fullReads).toHaveLength(1);

    await progress(id(5), { step: 3, total: 10, message: 'half way' });
    expect(await read(all)).toBe(await expected(all));
    expect(fullReads[1]).toEqual([id(5)]);
  });

  it('sees every kind of write, the application’s or anyone’s, as soon as it is committed', async () => {
    await read(all);
    const writes: [string, () => Promise<unknown>][] = [
      ['claim', () => repo.claim(job(7), 'w1', ['cpu:0'], 5)],
      ['markRunning', () => repo.markRunning(id(7), 'w1')],
      ['renewLeases (no listed column changes)', () => repo.renewLeases('w1', [id(7)])],
      ['requestCancel', () => repo.requestCancel(id(7))],
      ['finish', () => repo.finish(id(7), 'w1', 'failed', { error: 'boom "x"\n', exitCode: 3 })],
      ['cancelQueued', () => repo.cancelQueued(id(8))],
      ['plain SQL from elsewhere', () => db.query(`UPDATE "jobs" SET "name" = 'renamed by hand' WHERE "id" = '${id(9)}'`)],
    ];
    for (const [, write] of writes) {
      await write();
      expect(await read(all)).toBe(await expected(all));
    }
    const page = JSON.parse(await read(all)) as { items: { id: string; name: string; state: string; error: string | null }[] };
    expect(page.items.find((j) => j.id === id(7))).toMatchObject({ state: 'failed', error: 'boom "x"\n' });
    expect(page.items.find((j) => j.id === id(8))).toMatchObject({ state: 'cancelled' });
    expect(page.items.find((j) => j.id === id(9))).toMatchObject({ name: 'renamed by hand' });
  });

  it('raises row_version on every update, and keeps conditional updates counting only their own rows', async () => {
    const version = async () => Number((await db.query(`SELECT "row_version" AS v FROM "jobs" WHERE "id" = '${id(3)}'`))[0].v);
    const before = await version();
    await progress(id(3), { step: 1, total: null, message: null });
    await db.query(`UPDATE "jobs" SET "priority" = "priority" WHERE "id" = '${id(3)}'`);
    expect(await version()).toBe(before + 2);
    // A conditional transition that matches one row reports one, though the trigger wrote the row again.
    expect(await repo.cancelQueued(id(3))).toBe(true);
    expect(await repo.cancelQueued(id(3))).toBe(false);
    expect(await version()).toBe(before + 3);
  });

  it('lists a new job at once, and starts over when more jobs than it keeps are listed', async () => {
    writer = new JobPageWriter(sql, 5);
    await read({ limit: 4, offset: 0 });
    await repo.insert(job(13));
    const page = await read({ limit: 4, offset: 0 });
    expect(JSON.parse(page).items[0].id).toBe(id(13));
    expect(page).toBe(await expected({ limit: 4, offset: 0 }));
    // 4 kept + 1 new fits in 5; the next page's 4 do not: everything is read again.
    expect(fullReads.at(-1)).toEqual([id(13)]);
    expect(await read({ limit: 4, offset: 4 })).toBe(await expected({ limit: 4, offset: 4 }));
    expect(fullReads.at(-1)).toHaveLength(4);
    expect(writer.size).toBe(4);
  });
});
