import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serviceHarness, type FakeRunner, type ServiceHarness } from '../../test/support/service-harness';
import type { JobEntity } from '../jobs/job.entity';
import type { JobSupervisor } from './job-supervisor.service';

/** The supervisor on a real database, its runners faked: what a runner reports is recorded, or refused. */
describe('JobSupervisor', () => {
  let h: ServiceHarness;
  let supervisor: JobSupervisor;
  let ended: string[];
  afterEach(() => h.close());

  /** A job claimed by worker `w1` and started: its fake runner. */
  const start = async (over: Partial<JobEntity> = {}): Promise<{ job: JobEntity; runner: FakeRunner }> => {
    const job = await h.submit(over);
    expect(await h.jobs.claim(job, 'w1', ['cpu:0'], 4)).toBe('claimed');
    const claimed = (await h.jobs.findById(job.id))!;
    const hub = { userId: claimed.ownerId, admin: false, granted: [], budgetBytes: null, quotaBytes: 0 };
    supervisor.start(claimed, 'w1', { ownerIsAdmin: false, secrets: { 'environment.token': 't0k3n' }, hub }, () => ended.push(job.id));
    return { job: claimed, runner: h.runners.of(job.id)! };
  };
  const row = async (job: JobEntity) => (await h.jobs.findById(job.id))!;
  const logText = async (job: JobEntity) => (await h.events.after(job.id, 0, 100, 'log')).map((e) => (e.data as { text: string }).text).join('');

  beforeEach(async () => {
    h = await serviceHarness();
    supervisor = h.supervisor();
    ended = [];
  });

  it('hands the runner its job, workdir, policy and secrets, and records what it reports until it succeeds', async () => {
    const { job, runner } = await start();
    expect(runner.options).toMatchObject({ jobDir: h.config.jobDir(job.id), secrets: { 'environment.token': 't0k3n' } });
    expect(runner.options.policy.remoteEnvironments.allowLoopback).toBe(false);
    runner.emit({ type: 'running' });
    runner.emit({ type: 'progress', step: 1, total: 2, message: 'tick' });
    runner.emit({ type: 'metrics', step: 1, values: { loss: 0.5, broken: null } });
    runner.emit({ type: 'checkpoint', state: { step: 1 } });
    runner.emit({ type: 'hub', use: { type: 'model', repo: 'Org/Tiny', commit: 'a'.repeat(40), access: 'token', downloadedBytes: 1234 } });
    runner.print('step 1\n');
    const work = join(h.config.jobDir(job.id), 'work');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'result.json'), '{}');
    runner.emit({ type: 'artifact', name: 'result.json', path: join(work, 'result.json') });
    runner.emit({ type: 'done' });
    runner.exit(0);
    await h.until(() => ended.includes(job.id));

    const done = await row(job);
    expect(done).toMatchObject({ state: 'succeeded', exitCode: 0, progress: { step: 1, total: 2, message: 'tick' }, resumeState: { step: 1 } });
    expect((await h.events.series(job.id, { limit: 10 })).map((p) => [p.name, p.value])).toEqual([['loss', 0.5]]);
    expect((await h.events.listArtifacts(job.id)).map((a) => [a.name, a.size])).toEqual([['result.json', 2]]);
    expect(await logText(job)).toBe('step 1\n');
    expect(await h.hubAccess.bytesOf(job.ownerId)).toBe(1234);
  });

  it('fails the job with the message the runner sent, in the server’s words for its folders', async () => {
    const { job, runner } = await start();
    runner.emit({ type: 'running' });
    runner.emit({ type: 'failed', message: `cannot read ${h.config.home}/datasets/x` });
    runner.exit(1);
    await h.until(() => ended.includes(job.id));
    expect(await row(job)).toMatchObject({ state: 'failed', error: 'cannot read $OPENTINKER_HOME/datasets/x', exitCode: 1 });
  });

  it('drops a message that does not fit the runner protocol, says so in the job’s log, and goes on', async () => {
    const { job, runner } = await start();
    runner.emit({ type: 'running' });
    runner.emit({ type: 'progress', step: 'one', total: null, message: null });
    runner.emit({ type: 'artifact', name: 'x' });
    runner.emit({ type: 'metrics', step: 2, values: { loss: 0.25 } });
    runner.exit(0);
    await h.until(() => ended.includes(job.id));
    expect((await row(job)).progress).toBeNull();
    expect(await h.events.listArtifacts(job.id)).toEqual([]);
    expect((await h.events.series(job.id, { limit: 10 })).map((p) => p.value)).toEqual([0.25]);
    expect(await logText(job)).toBe(
      '[worker] dropped a message: The job runner sent a message that does not fit its protocol (step: Invalid input: expected number, received string)\n' +
        '[worker] dropped a message: The job runner sent a message that does not fit its protocol (path: Invalid input: expected string, received undefined)\n',
    );
  });

  it('re-queues a resumable job whose runner was killed from outside, and fails one that cannot resume', async () => {
    const resumable = await start({ maxAttempts: 3 });
    resumable.runner.emit({ type: 'running' });
    resumable.runner.exit(null, 'SIGKILL');
    await h.until(() => ended.includes(resumable.job.id));
    expect(await row(resumable.job)).toMatchObject({ state: 'queued', workerId: null });
    expect(h.queue.enqueued.filter((id) => id === resumable.job.id)).toHaveLength(2);

    const once = await start({ kind: 'inference', spec: { kind: 'inference', environment: { id: 'math' }, model: { preset: 'tiny-char' } } });
    once.runner.emit({ type: 'running' });
    once.runner.exit(null, 'SIGKILL', ['Killed']);
    await h.until(() => ended.includes(once.job.id));
    expect((await row(once.job)).state).toBe('failed');
  });
});
