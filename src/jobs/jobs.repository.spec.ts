import type { DataSource } from 'typeorm';
import { jobRow, jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { JobsRepository } from './jobs.repository';

/** The list reads rows past TypeORM; its summaries must be the entities TypeORM loads, less four fields. */
describe.each(testDatabases('jobs-repository'))('JobsRepository page and summaries (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;

  const job = jobRow;

  beforeAll(async () => {
    database = await open();
    ({ db, repo } = await jobsFixture(database));
    const t = 1_764_700_000_000;
    await repo.insert(job('00000000-0000-4000-8000-000000000001', t, { name: 'plain' }));
    await repo.insert(
      job('00000000-0000-4000-8000-000000000002', t + 1, {
        kind: 'train',
        name: 'everything set',
        state: 'failed',
        priority: 5,
        environmentId: 'math',
        spec: { kind: 'train', environment: { id: 'math' } },
        resources: { gpus: 1, cpu_slots: 2 },
        devices: ['gpu:0', 'cpu:1'],
        workerId: 'w1',
        attempts: 2,
        maxAttempts: 3,
        error: 'boom',
        exitCode: 1,
        progress: { step: 3, total: 10, message: 'x' },
        resumeState: { step: 3 },
        cancelRequestedAt: t + 5,
        leaseExpiresAt: t + 9,
        startedAt: t + 2,
        finishedAt: t + 6,
        updatedAt: t + 6,
      }),
    );
    await repo.insert(job('00000000-0000-4000-8000-000000000003', t + 2, { ownerId: 'u2', state: 'running' }));
    // Same created_at as the one before: the id breaks the tie.
    await repo.insert(job('00000000-0000-4000-8000-000000000004', t + 2, { ownerId: 'u2', kind: 'inference' }));
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('answers each job as TypeORM loads it, without spec, resume state, lease and admin priority, newest first', async () => {
    const { rows, total } = await repo.page({ limit: 10, offset: 0 });
    expect(total).toBe(4);
    expect(rows.map((j) => j.id.slice(-1))).toEqual(['4', '3', '2', '1']);
    const byId = new Map((await repo.summaries(rows.map((r) => r.id))).map((s) => [s.id, s]));
    const items = rows.map((r) => byId.get(r.id)!);
    expect(rows.map((r) => r.version)).toEqual(items.map((s) => s.version));
    for (const item of items) {
      const { spec, resumeState, leaseExpiresAt, adminPriority, ...summary } = { ...(await repo.findById(item.id))! };
      expect(adminPriority).toBe(0);
      expect(spec).toBeDefined();
      expect(resumeState !== undefined && leaseExpiresAt !== undefined).toBe(true);
      expect(item).toEqual(summary);
    }
    expect(items[2]).toMatchObject({ environmentId: 'math', devices: ['gpu:0', 'cpu:1'], progress: { step: 3, total: 10, message: 'x' }, cancelRequestedAt: 1_764_700_000_005 });
  });

  it('filters by owner, states (repeats ignored) and kind, pages, and counts what the filter matches', async () => {
    const ids = async (q: Partial<Parameters<JobsRepository['page']>[0]>) => {
      const { rows, total } = await repo.page({ limit: 10, offset: 0, ...q });
      return [rows.map((j) => j.id.slice(-1)).join(''), total];
    };
    expect(await ids({ ownerId: 'u2' })).toEqual(['43', 2]);
    expect(await ids({ states: ['queued', 'failed', 'queued'] })).toEqual(['421', 3]);
    expect(await ids({ ownerId: 'u2', states: ['queued'], kind: 'inference' })).toEqual(['4', 1]);
    expect(await ids({ kind: 'nope' })).toEqual(['', 0]);
    expect(await ids({ limit: 2, offset: 1 })).toEqual(['32', 4]);
    expect(await ids({ limit: 2, offset: 4 })).toEqual(['', 4]);
  });

  it("raises the version with every update of a row, and only that row's", async () => {
    const id = '00000000-0000-4000-8000-0000000000a1';
    const other = '00000000-0000-4000-8000-000000000001';
    await repo.insert(job(id, 1_764_800_000_000));
    const version = async (jobId: string) => (await repo.summaries([jobId]))[0].version;
    const before = await version(other);
    const seen = [await version(id)];
    const entity = async () => (await repo.findById(id))!;
    const bumped = async (write: () => Promise<unknown>) => {
      await write();
      seen.push(await version(id));
      expect(seen[seen.length - 1]).toBe(seen[seen.length - 2] + 1);
    };
    await bumped(async () => expect(await repo.claim(await entity(), 'w9', ['cpu:0'], 5)).toBe('claimed'));
    await bumped(async () => expect(await repo.markRunning(id, 'w9')).toBe(true));
    await bumped(() => repo.renewLeases('w9', [id]));
    await bumped(() => repo.saveResumeState(id, 'w9', { step: 1 }));
    await bumped(async () => expect(await repo.requestCancel(id)).toBe(true));
    await bumped(async () => expect(await repo.requeue(await entity(), 'lost', { countAttempt: false })).toBe(true));
    await bumped(async () => expect(await repo.cancelQueued(id)).toBe(true));
    // A transition that does not apply changes nothing.
    expect(await repo.cancelQueued(id)).toBe(false);
    expect(await version(id)).toBe(seen[seen.length - 1]);
    expect(await version(other)).toBe(before);
    expect(await repo.summaries([])).toEqual([]);
  });
});
