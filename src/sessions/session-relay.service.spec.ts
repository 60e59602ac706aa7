import { serviceHarness, type FakeRunner, type ServiceHarness } from '../../test/support/service-harness';
import type { JobEntity } from '../jobs/job.entity';

/** The session relay on a real database, the session's runner faked: calls in order, one at a time. */
describe('SessionRelayService', () => {
  let h: ServiceHarness;
  let job: JobEntity;
  let runner: FakeRunner;
  afterEach(() => h.close());

  const call = (callId: string, op: 'train_step' | 'validate' | 'close' = 'train_step') => h.calls.insertOnce(job.id, callId, op, { n: callId });
  const stateOf = async (callId: string) => (await h.calls.find(job.id, callId))!;

  beforeEach(async () => {
    h = await serviceHarness();
    const supervisor = h.supervisor();
    h.sessionRelay(supervisor);
    const worker = await h.worker(supervisor);
    expect(worker).toBeDefined();
    job = await h.submit({ kind: 'session', spec: { kind: 'session', environment: { id: 'math' }, model: { preset: 'tiny-char' } } });
    await h.until(() => h.runners.of(job.id) !== undefined);
    runner = h.runners.of(job.id)!;
    runner.emit({ type: 'running' });
  });

  it('hands the recorded calls to the runner one at a time, in order, and records each answer', async () => {
    const first = (await call('a')).call;
    const second = (await call('b', 'validate')).call;
    h.bus.sessionCall(job.id);
    await h.until(() => runner.sent.length === 1);
    await h.advance(1_000);
    expect(runner.sent).toEqual([{ type: 'call', id: first.id, op: 'train_step', args: { n: 'a' } }]);

    runner.emit({ type: 'call-result', id: first.id, result: { loss: 1 } });
    await h.until(() => runner.sent.length === 2);
    expect(runner.sent[1]).toEqual({ type: 'call', id: second.id, op: 'validate', args: { n: 'b' } });
    expect(await stateOf('a')).toMatchObject({ state: 'succeeded', result: { loss: 1 } });

    runner.emit({ type: 'call-result', id: second.id, error: 'no test split' });
    await h.until(async () => (await stateOf('b')).state === 'failed');
    expect((await stateOf('b')).error).toBe('no test split');
  });

  it('picks up a call recorded by another process within its poll, without a wake-up', async () => {
    await call('a');
    await h.advance(250);
    await h.until(() => runner.sent.length === 1);
  });

  it('fails the calls the runner had not answered when the session ends', async () => {
    await call('a');
    await call('b');
    h.bus.sessionCall(job.id);
    await h.until(() => runner.sent.length === 1);
    runner.exit(0);
    await h.until(async () => (await stateOf('b')).state === 'failed');
    expect(await stateOf('a')).toMatchObject({ state: 'failed', error: 'The session ended before answering this call' });
  });

  it("fails them with the runner's own error when it failed, the caller's mistake when its inputs were refused", async () => {
    await call('a');
    h.bus.sessionCall(job.id);
    await h.until(() => runner.sent.length === 1);
    runner.emit({ type: 'failed', message: `model.path "${h.config.home}/models/x" is not a model folder you may use`, category: 'user' });
    runner.exit(1);
    await h.until(async () => (await stateOf('a')).state === 'failed');
    const { error } = await stateOf('a');
    expect(error).toMatch(/^user: The session's runner failed: model\.path ".*\/models\/x" is not a model folder you may use$/);
    // Host paths are redacted, as in the job's own error.
    expect(error).not.toContain(h.config.home);
  });

  it('fails them as the server’s when the runner crashed, saying how it ended', async () => {
    await call('a');
    h.bus.sessionCall(job.id);
    await h.until(() => runner.sent.length === 1);
    runner.exit(null, 'SIGSEGV', ['Segmentation fault']);
    await h.until(async () => (await stateOf('a')).state === 'failed');
    expect((await stateOf('a')).error).toBe("The session's runner failed: The job runner was killed by SIGSEGV: Segmentation fault");
  });
});
