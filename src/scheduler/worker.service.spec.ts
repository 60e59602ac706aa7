import { FakeRunner, serviceHarness, type ServiceHarness } from '../../test/support/service-harness';
import type { JobEntity } from '../jobs/job.entity';

/**
 * The worker with its supervisor on a real database, runners faked: which queued job it starts and when
 * (priority, age, the per-user limit, a big job not overtaken), leases, cancellation, restarts.
 */
describe('WorkerService', () => {
  let h: ServiceHarness;
  afterEach(() => h.close());

  const state = async (job: JobEntity) => (await h.jobs.findById(job.id))?.state;
  const runnerOf = async (job: JobEntity): Promise<FakeRunner> => {
    await h.until(() => h.runners.of(job.id) !== undefined);
    return h.runners.of(job.id)!;
  };
  /** The runner reports and ends; the worker records it and frees its devices. */
  const finish = async (job: JobEntity) => {
    const runner = await runnerOf(job);
    runner.emit({ type: 'running' });
    runner.exit(0);
    await h.until(async () => (await state(job)) === 'succeeded');
  };

  it('starts the highest priority first, then the oldest, one at a time on one slot', async () => {
    h = await serviceHarness({ cpu_slots: 1 });
    const low = await h.submit({ priority: -5 });
    const mid1 = await h.submit();
    const high1 = await h.submit({ priority: 10 });
    const mid2 = await h.submit();
    const high2 = await h.submit({ priority: 10 });
    await h.worker();
    for (const job of [high1, high2, mid1, mid2, low]) await finish(job);
    expect(h.runners.startedIds).toEqual([high1, high2, mid1, mid2, low].map((j) => j.id));
  });

  it('holds a user at max_jobs_per_user, so another user’s later job starts first', async () => {
    h = await serviceHarness({ cpu_slots: 2, max_jobs_per_user: 1 });
    const a1 = await h.submit({ ownerId: 'u1' });
    const a2 = await h.submit({ ownerId: 'u1' });
    const b1 = await h.submit({ ownerId: 'u2' });
    await h.worker();
    await h.until(() => h.runners.all.length === 2);
    expect(h.runners.startedIds).toEqual([a1.id, b1.id]);
    expect(await state(a2)).toBe('queued');
    await finish(a1);
    await h.until(() => h.runners.all.length === 3);
    expect(h.runners.startedIds[2]).toBe(a2.id);
  });

  it('keeps devices for a big job rather than let later small jobs overtake it, and skips a job no worker could hold', async () => {
    h = await serviceHarness({ cpu_slots: 2 });
    const small = await h.submit();
    await h.worker();
    await runnerOf(small);
    const gpu = await h.submit({ resources: { gpus: 1, cpu_slots: 1 } });
    const big = await h.submit({ resources: { gpus: 0, cpu_slots: 2 } });
    const later = await h.submit();
    // A slot is free, but the big job comes first and needs both: nothing starts until the small one ends.
    await h.advance(2_000);
    expect(h.runners.startedIds).toEqual([small.id]);
    await finish(small);
    await finish(big);
    await finish(later);
    expect(h.runners.startedIds).toEqual([small.id, big.id, later.id]);
    expect(await state(gpu)).toBe('queued');
  });

  it('renews the leases of its jobs on every heartbeat, and stops the runner of a job whose cancel was asked', async () => {
    h = await serviceHarness({ heartbeat_seconds: 1, lease_seconds: 5 });
    const job = await h.submit({ kind: 'sleep', spec: { kind: 'sleep', steps: 100 } });
    await h.worker();
    const runner = await runnerOf(job);
    runner.emit({ type: 'running' });
    await h.until(async () => (await state(job)) === 'running');
    const firstLease = (await h.jobs.findById(job.id))!.leaseExpiresAt!;
    await h.advance(3_000);
    expect((await h.jobs.findById(job.id))!.leaseExpiresAt).toBeGreaterThan(firstLease);
    expect(await h.leaseReaper().sweep()).toBe(0);

    await h.jobs.requestCancel(job.id);
    await h.advance(1_000);
    expect(runner.stopped).toBe(true);
    runner.exit(null, 'SIGTERM');
    await h.until(async () => (await state(job)) === 'cancelled');
  });

  it('ends, when it starts again under the same id, the jobs its previous process was running', async () => {
    h = await serviceHarness({ worker_id: 'w-fixed' });
    const job = await h.submit();
    await h.jobs.claim(job, 'w-fixed', ['cpu:0'], 4);
    await h.worker();
    const after = (await h.jobs.findById(job.id))!;
    expect(after.state).toBe('failed');
    expect(after.error).toBe('Worker w-fixed restarted while the job was running');
  });
});
