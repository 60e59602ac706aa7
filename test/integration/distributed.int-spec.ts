/**
 * Distributed mode against the real local Redis and PostgreSQL: an API process (this one, no worker)
 * and two standalone `opentinker worker` processes sharing a fresh PostgreSQL database and a BullMQ queue.
 *
 * Isolation: the run gets its own database (`opentinker_it_<random>`, dropped at the end) and its own
 * Redis logical database (an index 1..15 in the Redis URL, reserved by a lock key in it), in which only
 * this queue's keys are removed at start and end. The API and the workers are given the same URLs.
 * Tests run in order and share the cluster; each leaves both workers running and idle.
 */
import { jest } from '@jest/globals';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { WorkerEntity } from '../../src/scheduler/worker.entity';
import { BULLMQ_QUEUE_NAME, BullmqQueue } from '../../src/scheduler/bullmq.queue';
import { JOB_QUEUE } from '../../src/scheduler/job-queue';
import { startTestApp, TestApp } from '../support/test-app';
import { Cluster, createDatabase, dropDatabase, dropQueueKeys as dropKeys, FINAL, HEARTBEAT_SECONDS, LEASE_SECONDS, reserveRedisDb, runnerPids } from './cluster';

jest.setTimeout(60_000);

const W1 = `it-w1-${randomBytes(2).toString('hex')}`;
const W2 = `it-w2-${randomBytes(2).toString('hex')}`;

let c: Cluster;
let t: TestApp;
let db: { name: string; url: string } | undefined;
let redisDb: { url: string; release: () => Promise<void> } | undefined;
let redis: IORedis;
let queue: Queue;
let alice: string;
let bob: string;
let carol: string;

// Short names for the cluster's helpers.
const until = <T>(what: string, check: () => Promise<T | undefined | null | false>, timeoutMs?: number, everyMs?: number) => c.until(what, check, timeoutMs, everyMs);
const submit = (key: string, body: Record<string, unknown>) => c.submit(key, body);
const getJob = (id: string) => c.job(id);
const waitState = (id: string, states: string[], timeoutMs?: number) => c.waitState(id, states, timeoutMs);
const stateEvents = (id: string) => c.stateEvents(id);
const liveWorkerIds = () => c.liveWorkerIds();
const startWorker = (id: string, settings?: Record<string, string>) => c.startWorker(id, settings);
const ready = (w: ReturnType<Cluster['startWorker']>) => c.ready(w);
const stopWorker = (w: ReturnType<Cluster['startWorker']>, signal: NodeJS.Signals) => c.stopWorker(w, signal);
const restartWorker = (id: string, settings?: Record<string, string>) => c.restartWorker(id, settings);
const dropQueueKeys = () => dropKeys(redis);
const workers = { get: (id: string) => c.workers.get(id) };
/** The API process's own queue adapter, to run its reconciler on demand. */
const apiQueue = () => t.app.get<symbol, BullmqQueue>(JOB_QUEUE, { strict: false });

describe('distributed mode (BullMQ on Redis, PostgreSQL, two worker processes)', () => {
  beforeAll(async () => {
    db = await createDatabase();
    redisDb = await reserveRedisDb();
    redis = new IORedis(redisDb.url, { maxRetriesPerRequest: null });
    queue = new Queue(BULLMQ_QUEUE_NAME, { connection: redis });
    await queue.obliterate({ force: true });
    await dropQueueKeys();

    c = new Cluster({ databaseUrl: db.url, redisUrl: redisDb.url });
    t = c.t = await startTestApp({
      worker: false,
      config: { database_url: db.url, redis_url: redisDb.url, lease_seconds: LEASE_SECONDS, heartbeat_seconds: HEARTBEAT_SECONDS, max_user_priority: 50 },
    });
    const user = async (name: string) => (await t.request('POST', '/v1/users', { body: { name } })).body.api_key.key as string;
    alice = await user('alice');
    bob = await user('bob');
    carol = await user('carol');
    // The API migrated the database; now both workers can boot together.
    const started = [startWorker(W1), startWorker(W2)];
    await Promise.all(started.map(ready));
  }, 90_000);

  afterAll(async () => {
    await c?.killAll();
    await t?.close().catch(() => undefined);
    await queue?.obliterate({ force: true }).catch(() => undefined);
    await queue?.close().catch(() => undefined);
    redis?.disconnect();
    await redisDb?.release().catch(() => undefined);
    if (db) await dropDatabase(db.name).catch(() => undefined);
    c?.removeHomes();
  }, 30_000);

  it('spreads jobs of two users over both workers and runs each exactly once', async () => {
    const devices = (await t.request('GET', '/v1/devices')).body;
    expect(devices.map((w: any) => w.worker_id).sort()).toEqual([W1, W2].sort());
    for (const w of devices) expect(w.devices.map((d: any) => d.id).sort()).toEqual(['cpu:0', 'cpu:1']);

    // A job that no running worker can fit (3 CPU slots; a stopped worker the cluster knows has 4) stays
    // queued, its entry in line in Redis, blocking nobody.
    const now = Date.now();
    await t.app
      .get(DataSource)
      .getRepository(WorkerEntity)
      .insert({
        id: 'big-box',
        hostname: 'big-box',
        pid: 1,
        devices: [0, 1, 2, 3].map((i) => ({ id: `cpu:${i}`, kind: 'cpu' as const, name: 'CPU slot', memoryMb: null })),
        startedAt: now,
        lastSeenAt: now,
        stoppedAt: now,
      });
    const unfit = await submit(carol, { name: 'unfit', steps: 1, step_seconds: 0, resources: { gpus: 0, cpu_slots: 3 } });
    expect(['waiting', 'prioritized']).toContain(await queue.getJobState(unfit.id));

    const submitted: any[] = [];
    for (let i = 0; i < 12; i++) submitted.push(await submit(i % 2 ? bob : alice, { name: `fan-${i}`, steps: 2, step_seconds: 0.15 }));
    const done = await until(
      '12 jobs to finish',
      async () => {
        const jobs = await Promise.all(submitted.map((j) => getJob(j.id)));
        return jobs.every((j) => FINAL.includes(j.state)) && jobs;
      },
      45_000,
      250,
    );

    for (const job of done) {
      expect([job.name, job.state, job.attempts, job.exit_code]).toEqual([job.name, 'succeeded', 1, 0]);
      expect(job.progress).toEqual({ step: 2, total: 2, message: 'tick' });
      expect([W1, W2]).toContain(job.worker_id);
      const states = await stateEvents(job.id);
      expect(states.map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'succeeded']);
      expect(states[1].worker_id).toBe(job.worker_id);
    }
    expect(new Set(done.map((j) => j.worker_id))).toEqual(new Set([W1, W2]));

    // The unfit job is still queued, its entry still in Redis (the reconciler has nothing to add); it cancels cleanly.
    expect((await getJob(unfit.id)).state).toBe('queued');
    expect(await apiQueue().reconcile()).toBe(0);
    expect(await queue.getJob(unfit.id)).toBeDefined();
    expect((await t.request('POST', `/v1/jobs/${unfit.id}/cancel`, { key: carol })).body.state).toBe('cancelled');
    // Removed at once, or (if a worker held it that instant) dropped by that worker as no longer queued.
    await until('the cancelled job to leave Redis', async () => (await queue.getJob(unfit.id)) === undefined, 5_000);
    // Nothing left behind in Redis once everything ran.
    expect(await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active')).toEqual({ waiting: 0, prioritized: 0, delayed: 0, active: 0 });
  });

  it("starts an admin's high-priority job before other users' earlier ones, and forgets a queued job that is cancelled", async () => {
    // Fill all four slots; one blocker ends early so that exactly one slot frees first.
    const short = await submit(carol, { name: 'block-short', steps: 1, step_seconds: 2 });
    const long: any[] = [];
    for (let i = 0; i < 3; i++) long.push(await submit(carol, { name: `block-long-${i}`, steps: 1, step_seconds: 6 }));
    await until('four blockers running', async () => {
      const jobs = await Promise.all([short, ...long].map((j) => getJob(j.id)));
      return jobs.every((j) => j.state === 'running');
    });

    const lows: any[] = [];
    for (let i = 0; i < 3; i++) lows.push(await submit(alice, { name: `low-${i}`, priority: -10, steps: 1, step_seconds: 0.1 }));
    const doomed = await submit(alice, { name: 'low-cancelled', priority: -10, steps: 1, step_seconds: 0.1 });
    // Above max_user_priority (50 here), which only an admin may give: it counts across users.
    const high = await submit(t.adminKey, { name: 'high', priority: 60, steps: 1, step_seconds: 0.1 });

    expect(await queue.getJob(doomed.id)).toBeDefined();
    const cancelled = await t.request('POST', `/v1/jobs/${doomed.id}/cancel`, { key: alice });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.state).toBe('cancelled');
    expect(await queue.getJob(doomed.id)).toBeUndefined();
    // The reconciler leaves entries that wait their turn alone.
    expect(await apiQueue().reconcile()).toBe(0);

    const highDone = await waitState(high.id, ['succeeded'], 20_000);
    const lowDone = await Promise.all(lows.map((j) => waitState(j.id, ['succeeded'], 20_000)));
    const longDone = await Promise.all(long.map((j) => waitState(j.id, ['succeeded'], 20_000)));

    const at = (iso: string) => Date.parse(iso);
    for (const low of lowDone) expect(at(highDone.started_at)).toBeLessThan(at(low.started_at));
    // It took the first freed slot rather than waiting for the queue ahead of it.
    expect(at(highDone.started_at)).toBeLessThan(Math.min(...longDone.map((j) => at(j.finished_at))));

    const gone = await getJob(doomed.id);
    expect([gone.state, gone.attempts, gone.worker_id]).toEqual(['cancelled', 0, null]);
    expect((await stateEvents(doomed.id)).map((s) => s.state)).toEqual(['queued', 'cancelled']);
  });

  it('cancels a running job on a remote worker', async () => {
    const job = await submit(alice, { name: 'to-cancel', steps: 100, step_seconds: 0.2 });
    await until('the job to make progress', async () => (await getJob(job.id)).progress?.step >= 2);
    const res = await t.request('POST', `/v1/jobs/${job.id}/cancel`, { key: alice });
    expect(res.status).toBe(202);
    expect(res.body.cancel_requested).toBe(true);
    const ended = await waitState(job.id, ['cancelled'], 15_000);
    expect(ended.progress.step).toBeLessThan(100);
    expect(ended.attempts).toBe(1);
    expect((await stateEvents(job.id)).map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'cancelled']);
    // The runner was asked to stop (SIGTERM) and said so, rather than being killed outright.
    expect((await t.request('GET', `/v1/jobs/${job.id}/logs`, { key: alice })).text).toMatch(/stopping at step \d+: cancelled/);
  });

  describe('a worker process leaving mid-job', () => {
    it('fails a job that may run only once, naming the lost lease', async () => {
      const job = await submit(alice, { name: 'once', steps: 200, step_seconds: 0.2, max_attempts: 1 });
      const running = await waitState(job.id, ['running']);
      const victim = workers.get(running.worker_id)!;
      expect(victim).toBeDefined();
      expect(runnerPids(job.id)).toHaveLength(1);
      await stopWorker(victim, 'SIGKILL');
      // Its job runner notices that its worker is gone and stops too: nothing runs the job unrecorded.
      await until('the orphaned job runner to exit', async () => runnerPids(job.id).length === 0, 10_000);

      const failed = await waitState(job.id, ['failed'], 20_000);
      expect(failed.error).toMatch(/lease/);
      expect(failed.error).toContain(victim.id);
      expect(failed.attempts).toBe(1);
      expect((await stateEvents(job.id)).map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'failed']);
      // The dead worker drops out of the device list once its heartbeat is older than a lease.
      await until('the dead worker to leave the device list', async () => !(await liveWorkerIds()).includes(victim.id));

      await ready(startWorker(victim.id));
      expect((await liveWorkerIds()).sort()).toEqual([W1, W2].sort());
    });

    it('re-queues a resumable job, which another worker finishes from its checkpoint', async () => {
      const job = await submit(bob, { name: 'resumable', steps: 25, step_seconds: 0.2, max_attempts: 3 });
      const running = await until('the job to pass step 4', async () => {
        const j = await getJob(job.id);
        return j.state === 'running' && j.progress?.step >= 4 && j;
      });
      const victim = workers.get(running.worker_id)!;
      const survivor = running.worker_id === W1 ? W2 : W1;
      await stopWorker(victim, 'SIGKILL');
      await until('the orphaned job runner to exit', async () => runnerPids(job.id).length === 0, 10_000);

      const done = await waitState(job.id, ['succeeded'], 30_000);
      expect(done.worker_id).toBe(survivor);
      expect(done.attempts).toBe(2);
      expect(done.progress).toEqual({ step: 25, total: 25, message: 'tick' });

      const states = await stateEvents(job.id);
      expect(states.map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'queued', 'starting', 'running', 'succeeded']);
      expect(states[1].worker_id).toBe(victim.id);
      expect(states[3].reason).toMatch(/lease.*re-queued \(attempt 2 of 3\)/);
      expect(states[4].worker_id).toBe(survivor);

      const logs = await c.logs(job.id);
      const resumedAfter = Number(/resuming after step (\d+) \(attempt 2\)/.exec(logs)?.[1]);
      expect(resumedAfter).toBeGreaterThanOrEqual(4);
      // The second run counted only the remaining steps.
      expect(logs).toContain(`step ${resumedAfter + 1}/25: tick`);
      const result = await t.request('GET', `/v1/jobs/${job.id}/artifacts/result.json`, { key: bob });
      expect(result.status).toBe(200);
      expect(JSON.parse(result.text)).toMatchObject({ steps: 25, resumed_from: resumedAfter });

      await ready(startWorker(victim.id));
    });

    it('a worker shut down cleanly hands its resumable job back without spending an attempt', async () => {
      const job = await submit(alice, { name: 'handed-back', steps: 20, step_seconds: 0.2 });
      const running = await until('the job to pass step 3', async () => {
        const j = await getJob(job.id);
        return j.state === 'running' && j.progress?.step >= 3 && j;
      });
      const leaving = workers.get(running.worker_id)!;
      const survivor = running.worker_id === W1 ? W2 : W1;
      await stopWorker(leaving, 'SIGTERM');

      const done = await waitState(job.id, ['succeeded'], 25_000);
      expect([done.worker_id, done.attempts]).toEqual([survivor, 1]);
      const states = await stateEvents(job.id);
      expect(states.map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'queued', 'starting', 'running', 'succeeded']);
      expect(states[3].reason).toContain(`worker ${leaving.id} shut down`);
      const logs = await c.logs(job.id);
      expect(Number(/resuming after step (\d+)/.exec(logs)?.[1])).toBeGreaterThanOrEqual(3);

      await ready(startWorker(leaving.id));
    });
  });

  describe('Redis losing queue entries', () => {
    it('re-adds queued jobs that Redis forgot or half-forgot, and runs a job whose entry a dead consumer holds', async () => {
      // One worker stops cleanly; the other is kept busy, so new jobs stay queued for a moment.
      const stopped = workers.get(W2)!;
      const exit = await stopWorker(stopped, 'SIGTERM');
      expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
      expect(await liveWorkerIds()).toEqual([W1]);
      const blockers = [await submit(carol, { name: 'busy-0', steps: 1, step_seconds: 4 }), await submit(carol, { name: 'busy-1', steps: 1, step_seconds: 4 })];
      await until('worker 1 to be full', async () => {
        const jobs = await Promise.all(blockers.map((j) => getJob(j.id)));
        return jobs.every((j) => j.state === 'running' && j.worker_id === W1);
      });

      // A queued job whose entry Redis then loses.
      const lost = await submit(alice, { name: 'lost-entry', steps: 1, step_seconds: 0.1 });
      expect(await queue.getJob(lost.id)).toBeDefined();
      expect(await dropQueueKeys()).toBeGreaterThan(0);
      expect(await queue.getJob(lost.id)).toBeUndefined();
      expect((await getJob(lost.id)).state).toBe('queued');

      // A queued job whose entry survives only in part: its data, but in no list (e.g. eviction).
      const stray = await submit(carol, { name: 'stray-entry', steps: 1, step_seconds: 0.1 });
      expect(await redis.zrem(`bull:${BULLMQ_QUEUE_NAME}:prioritized`, stray.id)).toBe(1);
      expect(await queue.getJob(stray.id)).toBeDefined();
      expect(await queue.getJobState(stray.id)).toBe('unknown');

      // A queued job whose entry a consumer took (locked, active) and then died without settling.
      const orphan = await submit(bob, { name: 'orphaned-entry', steps: 1, step_seconds: 0.1 });
      const connection = new IORedis(redisDb!.url, { maxRetriesPerRequest: null });
      const consumer = new Worker(BULLMQ_QUEUE_NAME, null, { connection, autorun: false, lockDuration: 1_000 });
      try {
        const entry = await consumer.getNextJob('crashed-consumer', { block: false });
        expect(entry?.id).toBe(orphan.id);
      } finally {
        await consumer.close(true).catch(() => undefined);
        connection.disconnect();
      }
      expect(await queue.getJobState(orphan.id)).toBe('active');

      // A worker boot runs the reconciler, which re-adds the lost entry.
      await ready(startWorker(W2));
      const lostDone = await waitState(lost.id, ['succeeded'], 20_000);
      expect(lostDone.attempts).toBe(1);
      expect((await stateEvents(lost.id)).filter((s) => s.state === 'starting')).toHaveLength(1);

      const strayDone = await waitState(stray.id, ['succeeded'], 20_000);
      expect(strayDone.attempts).toBe(1);

      // The orphaned entry does not hold its job back: the choice is the database's.
      const orphanDone = await waitState(orphan.id, ['succeeded'], 25_000);
      expect(orphanDone.attempts).toBe(1);
      expect((await stateEvents(orphan.id)).map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'succeeded']);
      for (const b of blockers) expect((await waitState(b.id, ['succeeded'])).attempts).toBe(1);
      // Entries whose jobs ran (the orphan's, removable once its lock expired) are dropped by the reconciler.
      await until('the orphan entry’s lock to expire', async () => (await redis.exists(`bull:${BULLMQ_QUEUE_NAME}:${orphan.id}:lock`)) === 0, 5_000);
      expect(await apiQueue().reconcile()).toBe(0);
      expect(await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active')).toEqual({ waiting: 0, prioritized: 0, delayed: 0, active: 0 });
    });
  });

  it('with max_jobs_per_user=1, never overlaps one user’s jobs while another user’s run alongside', async () => {
    await Promise.all([W1, W2].map((id) => restartWorker(id, { OPENTINKER_MAX_JOBS_PER_USER: '1' })));
    const alices: any[] = [];
    const bobs: any[] = [];
    for (let i = 0; i < 4; i++) alices.push(await submit(alice, { name: `a-${i}`, steps: 1, step_seconds: 0.5 }));
    for (let i = 0; i < 2; i++) bobs.push(await submit(bob, { name: `b-${i}`, steps: 2, step_seconds: 0.6 }));
    const done = await Promise.all([...alices, ...bobs].map((j) => waitState(j.id, ['succeeded'], 40_000)));
    const span = (j: any) => [Date.parse(j.started_at), Date.parse(j.finished_at)] as const;
    const overlaps = (a: any, b: any) => span(a)[0] < span(b)[1] && span(b)[0] < span(a)[1];
    const aDone = done.slice(0, 4);
    const bDone = done.slice(4);
    for (const group of [aDone, bDone]) {
      for (let i = 0; i < group.length; i++) {
        for (let k = i + 1; k < group.length; k++) expect([group[i].name, group[k].name, overlaps(group[i], group[k])]).toEqual([group[i].name, group[k].name, false]);
      }
    }
    expect(aDone.some((a) => bDone.some((b) => overlaps(a, b)))).toBe(true);
    for (const j of done) expect(j.attempts).toBe(1);
  });
});
