import { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSse, startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';
import { exited, processesUnder, spawnWorker } from '../support/worker-process';

describe('losing a worker mid-job (API and worker in separate processes)', () => {
  let home: string;
  let t: TestApp;
  const workers: ChildProcess[] = [];

  const startWorker = (id: string) => {
    const w = spawnWorker({ OPENTINKER_HOME: home, OPENTINKER_WORKER_ID: id, OPENTINKER_CPU_SLOTS: '1' });
    workers.push(w);
    return w;
  };
  const kill = async (w: ChildProcess) => {
    w.kill('SIGKILL');
    await exited(w);
  };

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'opentinker-loss-'));
    t = await startTestApp({ worker: false, home });
  });
  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('fails a non-resumable run with the reason, and its job runner does not outlive the worker', async () => {
    const worker = startWorker('w-crash-1');
    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 200, step_seconds: 0.1, max_attempts: 1 } })).body;
    const running = await waitForState(t, job.id, ['running']);
    expect(running.worker_id).toBe('w-crash-1');
    const jobDir = join(home, 'jobs', job.id);
    expect(processesUnder(jobDir)).toHaveLength(1);

    await kill(worker);
    const failed = await waitForState(t, job.id, ['failed', 'queued', 'succeeded']);
    expect(failed.state).toBe('failed');
    expect(failed.error).toContain('Worker w-crash-1 stopped renewing');
    expect(failed.error).toContain('job runner was lost');
    await waitFor(async () => processesUnder(jobDir).length === 0, 5_000);
  });

  it('re-queues a resumable job and resumes it from its checkpoint on another worker', async () => {
    const first = startWorker('w-crash-2');
    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 25, step_seconds: 0.1, max_attempts: 2 } })).body;
    await waitFor(async () => {
      const res = await t.request('GET', `/v1/jobs/${job.id}`);
      return res.body.progress?.step >= 5 ? res.body : undefined;
    });
    await kill(first);
    const requeued = await waitForState(t, job.id, ['queued', 'failed']);
    expect(requeued).toMatchObject({ state: 'queued', attempts: 1, worker_id: null });

    startWorker('w-rescue');
    const done = await waitForState(t, job.id, ['succeeded', 'failed'], 20_000);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 2, worker_id: 'w-rescue' });
    const logs = (await t.request('GET', `/v1/jobs/${job.id}/logs`)).text;
    expect(logs).toMatch(/resuming after step ([5-9]|\d\d)/);
    const result = JSON.parse((await t.request('GET', `/v1/jobs/${job.id}/artifacts/result.json`)).text);
    expect(result.resumed_from).toBeGreaterThanOrEqual(5);
    const events = parseSse((await t.request('GET', `/v1/jobs/${job.id}/events`)).text);
    const states = events.filter((e) => e.event === 'state').map((e) => e.data.state);
    expect(states).toEqual(['queued', 'starting', 'running', 'queued', 'starting', 'running', 'succeeded']);
  });

  it('keeps queued jobs across a restart of the API', async () => {
    for (const w of workers) await kill(w);
    const job = (await t.request('POST', '/v1/jobs', { body: { kind: 'sleep', steps: 1, step_seconds: 0 } })).body;
    await t.app.close();
    t = await startTestApp({ worker: false, home });
    expect((await t.request('GET', `/v1/jobs/${job.id}`)).body.state).toBe('queued');
    startWorker('w-after-restart');
    expect((await waitForState(t, job.id, ['succeeded', 'failed'])).state).toBe('succeeded');
  });
});
