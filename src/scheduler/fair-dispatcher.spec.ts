import { jest } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { jobRow, jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { JobEntity, type JobResources } from '../jobs/job.entity';
import type { JobsRepository } from '../jobs/jobs.repository';
import { DevicePool, type Evictable } from './device-pool';
import { FairDispatcher, USER_LOOKAHEAD } from './fair-dispatcher';
import type { DeviceInfo } from './worker.entity';

const cpu = (n: number): DeviceInfo[] => Array.from({ length: n }, (_, i) => ({ id: `cpu:${i}`, kind: 'cpu' as const, name: 'c', memoryMb: null }));

/** The dispatch choice against a real database: who gets the next free device, and at what cost. */
describe.each(testDatabases('fair-dispatch'))('FairDispatcher (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;
  let dispatcher: FairDispatcher;
  let seq = 0;
  const T = 1_765_710_000_000;

  const job = (ownerId: string, over: Partial<JobEntity> = {}): JobEntity => {
    seq += 1;
    return jobRow(`00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`, T + seq, { ownerId, ...over });
  };
  const submit = async (ownerId: string, over: Partial<JobEntity> = {}) => {
    const j = job(ownerId, over);
    await repo.insert(j);
    return j.id;
  };
  /** Many queued jobs of one owner in a few statements (the repository inserts one at a time). */
  const flood = async (ownerId: string, n: number, resources: JobResources = { gpus: 0, cpu_slots: 1 }) => {
    const rows = Array.from({ length: n }, () => job(ownerId, { resources }));
    for (let i = 0; i < rows.length; i += 100) await db.getRepository(JobEntity).insert(rows.slice(i, i + 100) as never);
  };
  const claim = (pool: DevicePool, userLimit = 4) => dispatcher.claimNext({ workerId: 'w1', pool, userLimit });

  beforeAll(async () => {
    database = await open();
    ({ db, repo } = await jobsFixture(database));
    await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u3', 'carol', 'user', 1), ('admin', 'root', 'admin', 1)`);
    dispatcher = new FairDispatcher(repo);
  });
  beforeEach(async () => {
    await db.query('DELETE FROM job_events');
    await db.query('DELETE FROM jobs');
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('gives a free device to B while A, at her running limit, holds hundreds of queued jobs (beyond any window)', async () => {
    const running = await submit('u1');
    expect((await claim(new DevicePool(cpu(1)), 1))?.id).toBe(running);
    await flood('u1', 300);
    const bob = await submit('u2');
    const claimed = await claim(new DevicePool(cpu(1)), 1);
    expect(claimed).toMatchObject({ id: bob, state: 'starting', workerId: 'w1', devices: ['cpu:0'], attempts: 1 });
  });

  it('gives the next device to the user holding the fewest, not to the oldest job', async () => {
    const pool = new DevicePool(cpu(3));
    await flood('u1', 50);
    const bob = await submit('u2');
    const carol = await submit('u3');
    const order: string[] = [];
    for (let i = 0; i < 3; i++) order.push((await claim(pool))!.ownerId);
    // A's jobs are older, but once she holds a device the others go first.
    expect(order).toEqual(['u1', 'u2', 'u3']);
    expect((await repo.findById(bob))!.state).toBe('starting');
    expect((await repo.findById(carol))!.state).toBe('starting');
  });

  it('takes turns on a single device: the user whose last job started longest ago goes next', async () => {
    const pool = new DevicePool(cpu(1));
    await flood('u1', 20);
    const bob = await submit('u2');
    const first = (await claim(pool))!;
    expect(first.ownerId).toBe('u1');
    // A's job ran and ended; both users hold nothing again, and B, never served, goes before A's older jobs.
    expect(await repo.markRunning(first.id, 'w1')).toBe(true);
    expect(await repo.finish(first.id, 'w1', 'succeeded')).toBe(true);
    pool.release(first.devices!);
    expect((await claim(pool))!.id).toBe(bob);
  });

  it("orders a user's own jobs by priority, while a plain user's priority does not jump other users", async () => {
    const aliceLow = await submit('u1', { priority: -5 });
    const bobHigh = await submit('u2', { priority: 10 });
    const bobTop = await submit('u2', { priority: 20 });
    const pool = new DevicePool(cpu(3));
    expect((await claim(pool))!.id).toBe(aliceLow);
    expect((await claim(pool))!.id).toBe(bobTop);
    expect((await claim(pool))!.id).toBe(bobHigh);
  });

  it("puts an admin's priority above the users' ceiling ahead of fair share", async () => {
    await submit('u2');
    const admin = await submit('admin', { priority: 50, adminPriority: 50 });
    const pool = new DevicePool(cpu(2));
    await submit('admin');
    expect((await claim(pool))!.id).toBe(admin);
  });

  it('keeps the free device for the chosen job that needs more than is free (not overtaken), and takes nothing', async () => {
    const pool = new DevicePool(cpu(2));
    pool.take(['cpu:1']);
    const big = await submit('u1', { resources: { gpus: 0, cpu_slots: 2 } });
    const small = await submit('u2');
    expect(await claim(pool)).toBeNull();
    expect((await repo.findById(small))!.state).toBe('queued');
    pool.release(['cpu:1']);
    expect((await claim(pool))!.id).toBe(big);
  });

  it("looks past a user's jobs that need a bigger worker, up to the lookahead", async () => {
    await flood('u1', 3, { gpus: 1, cpu_slots: 0 });
    const cpuJob = await submit('u1');
    expect((await claim(new DevicePool(cpu(1))))!.id).toBe(cpuJob);
    await db.query('DELETE FROM jobs');
    await flood('u1', USER_LOOKAHEAD, { gpus: 1, cpu_slots: 0 });
    await submit('u1');
    const bob = await submit('u2');
    expect((await claim(new DevicePool(cpu(1))))!.id).toBe(bob);
    expect(await claim(new DevicePool(cpu(1)))).toBeNull();
  });

  it('evicts an idle model server for the chosen job, and never a busy one', async () => {
    const pool = new DevicePool(cpu(2));
    const server = (busy: boolean, lastUsed: number): Evictable & { evicted: boolean } => {
      const s = {
        idle: !busy,
        lastUsed,
        evicted: false,
        evict: async () => {
          s.evicted = true;
          s.idle = false;
          pool.release(pool.modelServerDevices.filter((id) => held.get(id) === s));
        },
      };
      return s;
    };
    const held = new Map<string, unknown>();
    const busy = server(true, 1);
    const idle = server(false, 2);
    held.set((await pool.acquire({ gpus: 0, cpu_slots: 1 }, 100, busy))[0], busy);
    held.set((await pool.acquire({ gpus: 0, cpu_slots: 1 }, 100, idle))[0], idle);
    const id = await submit('u1');
    expect(await claim(pool)).toMatchObject({ id, devices: ['cpu:1'] });
    expect([busy.evicted, idle.evicted]).toEqual([false, true]);
    await submit('u1');
    expect(await claim(pool)).toBeNull();
    expect(busy.evicted).toBe(false);
  });

  it('refuses a submission past the queued cap, and counts only queued jobs', async () => {
    await submit('u1');
    await submit('u1', { state: 'running' });
    expect(await repo.insert(job('u1'), {}, 2)).toBe('inserted');
    const refused = job('u1');
    expect(await repo.insert(refused, {}, 2)).toBe('queued_limit');
    expect(await repo.findById(refused.id)).toBeNull();
    expect(await repo.insert(job('u2'), {}, 2)).toBe('inserted');
  });

  if (_ === 'SQLite') {
    it('reads the queue through the dispatch index only: no statement scans or sorts the jobs table', async () => {
      await flood('u1', 20);
      const plans: string[] = [];
      const query = db.query.bind(db);
      const spy = jest.spyOn(db, 'query').mockImplementation(async (sql: string, params?: unknown) => {
        if (/^\s*(WITH|SELECT)/i.test(sql)) plans.push(...(await query(`EXPLAIN QUERY PLAN ${sql}`, params as unknown[])).map((r: { detail: string }) => r.detail));
        return query(sql, params as unknown[]);
      });
      try {
        await repo.queueHeads();
        await repo.queuedOf('u1', USER_LOOKAHEAD);
      } finally {
        spy.mockRestore();
      }
      expect(plans.some((p) => p.includes('idx_jobs_dispatch'))).toBe(true);
      expect(plans.some((p) => p.includes('idx_jobs_owner_started'))).toBe(true);
      // Neither a scan of the table nor a sort of the rows read.
      expect(plans.filter((p) => /^SCAN jobs\b(?! USING)|TEMP B-TREE/.test(p))).toEqual([]);
    });
  }
});
