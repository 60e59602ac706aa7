import { serviceHarness, T0, type ServiceHarness } from '../../test/support/service-harness';
import type { JobEntity } from '../jobs/job.entity';
import type { LeaseReaper } from './lease-reaper.service';

/** The lease reaper on a real database, the clock faked: what happens to a job whose worker went quiet. */
describe('LeaseReaper', () => {
  let h: ServiceHarness;
  let reaper: LeaseReaper;
  const LEASE_MS = 30_000;
  afterEach(() => h.close());

  beforeEach(async () => {
    h = await serviceHarness({ lease_seconds: LEASE_MS / 1000 });
    reaper = h.leaseReaper();
  });

  /** A job claimed by worker `w1` (whose last heartbeat was at T0): its lease runs out at T0 + 30 s. */
  const claimed = async (over: Partial<JobEntity> = {}): Promise<JobEntity> => {
    const job = await h.submit(over);
    await h.workers.register(Object.assign({ id: 'w1', hostname: 'h', pid: 1, devices: [], modelServerDevices: [], startedAt: T0, lastSeenAt: T0, stoppedAt: null }));
    expect(await h.jobs.claim(job, 'w1', ['cpu:0'], 4)).toBe('claimed');
    return (await h.jobs.findById(job.id))!;
  };
  const row = async (job: JobEntity) => (await h.jobs.findById(job.id))!;
  const afterLease = T0 + LEASE_MS + 1;

  it('leaves a job whose lease still runs', async () => {
    const job = await claimed();
    expect(await reaper.sweep(T0 + LEASE_MS - 1)).toBe(0);
    expect((await row(job)).state).toBe('starting');
  });

  it('re-queues a resumable job with attempts left, naming the worker and its last heartbeat, and hands it to the queue', async () => {
    const job = await claimed({ maxAttempts: 3 });
    expect(await reaper.sweep(afterLease)).toBe(1);
    const after = await row(job);
    expect(after).toMatchObject({ state: 'queued', workerId: null, devices: null, attempts: 1 });
    const [event] = (await h.events.after(job.id, 0, 10, 'state')).filter((e) => (e.data as { state?: string }).state === 'queued').slice(-1);
    expect((event.data as { reason: string }).reason).toBe(
      `Worker w1 stopped renewing the job's lease (last heartbeat ${new Date(T0).toISOString()}); its job runner was lost; re-queued (attempt 2 of 3)`,
    );
    expect(h.queue.enqueued.filter((id) => id === job.id)).toHaveLength(2);
  });

  it('fails a job of a kind that cannot resume, and one out of attempts', async () => {
    const once = await claimed({ kind: 'inference', spec: { kind: 'inference', environment: { id: 'math' }, model: { preset: 'tiny-char' } } });
    const spent = await claimed({ maxAttempts: 1 });
    expect(await reaper.sweep(afterLease)).toBe(2);
    expect(await row(once)).toMatchObject({ state: 'failed', error: expect.stringMatching(/^Worker w1 stopped renewing the job's lease .*; its job runner was lost$/) });
    expect((await row(spent)).error).toMatch(/its job runner was lost after 1 attempt\(s\)$/);
  });

  it('cancels a job whose cancel was asked, whatever its kind', async () => {
    const job = await claimed({ maxAttempts: 3 });
    await h.jobs.requestCancel(job.id);
    expect(await reaper.sweep(afterLease)).toBe(1);
    expect((await row(job)).state).toBe('cancelled');
  });

  it('sweeps on its own every third of a lease once booted', async () => {
    const job = await claimed({ maxAttempts: 1 });
    reaper.onApplicationBootstrap();
    await h.advance(LEASE_MS + LEASE_MS / 3);
    await h.until(async () => (await row(job)).state === 'failed');
  });
});
