import { DataSource } from 'typeorm';
import { WorkerEntity } from '../../src/scheduler/worker.entity';
import { startTestApp, TestApp, waitForState } from '../support/test-app';

/** Placement on one worker with one CPU slot: priorities, FIFO, the per-user limit and device fit. */
describe('scheduling', () => {
  const users = async (t: TestApp, ...names: string[]) => {
    const keys: string[] = [];
    for (const name of names) keys.push((await t.request('POST', '/v1/users', { body: { name } })).body.api_key.key);
    return keys;
  };
  const submit = async (t: TestApp, key: string, body: Record<string, unknown>) =>
    (await t.request('POST', '/v1/jobs', { key, body: { kind: 'sleep', step_seconds: 0, steps: 1, ...body } })).body.id as string;
  const startOrder = async (t: TestApp, ids: string[]) => {
    const jobs = await Promise.all(ids.map((id) => waitForState(t, id, ['succeeded', 'failed', 'cancelled'])));
    return jobs.sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at) || a.name.localeCompare(b.name)).map((j) => j.name);
  };

  it('runs higher priority first, then first come first served', async () => {
    const t = await startTestApp({ config: { cpu_slots: 1, max_user_priority: 10 } });
    try {
      const [alice] = await users(t, 'alice');
      const blocker = await submit(t, alice, { name: 'blocker', steps: 3, step_seconds: 0.2 });
      await waitForState(t, blocker, ['running']);
      const ids = [
        await submit(t, alice, { name: 'low-1', priority: -5 }),
        await submit(t, alice, { name: 'mid-1' }),
        await submit(t, alice, { name: 'high-1', priority: 10 }),
        await submit(t, alice, { name: 'mid-2' }),
        await submit(t, alice, { name: 'high-2', priority: 10 }),
      ];
      expect(await startOrder(t, [blocker, ...ids])).toEqual(['blocker', 'high-1', 'high-2', 'mid-1', 'mid-2', 'low-1']);
    } finally {
      await t.close();
    }
  });

  it('holds a user at the per-user limit so another user’s later job runs first', async () => {
    const t = await startTestApp({ config: { cpu_slots: 2, max_jobs_per_user: 1 } });
    try {
      const [alice, bob] = await users(t, 'alice', 'bob');
      const a1 = await submit(t, alice, { name: 'a1', steps: 4, step_seconds: 0.15 });
      const a2 = await submit(t, alice, { name: 'a2', steps: 4, step_seconds: 0.15 });
      const b1 = await submit(t, bob, { name: 'b1', steps: 1, step_seconds: 0.1 });
      const [j1, j2, j3] = await Promise.all([a1, a2, b1].map((id) => waitForState(t, id, ['succeeded'])));
      // Alice's jobs never overlap; Bob's job ran while Alice's first one did.
      expect(Date.parse(j2.started_at)).toBeGreaterThanOrEqual(Date.parse(j1.finished_at));
      expect(Date.parse(j3.started_at)).toBeLessThan(Date.parse(j1.finished_at));
    } finally {
      await t.close();
    }
  });

  it('lets a big job wait for devices without smaller later jobs overtaking it, and skips jobs no worker here can fit', async () => {
    const t = await startTestApp({ config: { cpu_slots: 2 } });
    try {
      const [alice] = await users(t, 'alice');
      // A GPU worker the cluster has known (stopped now): a GPU job is accepted, and waits for it.
      const now = Date.now();
      await t.app
        .get(DataSource)
        .getRepository(WorkerEntity)
        .insert({
          id: 'gpu-box',
          hostname: 'gpu-box',
          pid: 1,
          devices: [
            { id: 'gpu:0', kind: 'gpu', name: 'GPU', memoryMb: 81_920 },
            { id: 'cpu:0', kind: 'cpu', name: 'CPU slot', memoryMb: null },
          ],
          startedAt: now,
          lastSeenAt: now,
          stoppedAt: now,
        });
      const small = await submit(t, alice, { name: 'small', steps: 3, step_seconds: 0.15 });
      await waitForState(t, small, ['running']);
      const gpuJob = await submit(t, alice, { name: 'needs-gpu', resources: { gpus: 1 } });
      const big = await submit(t, alice, { name: 'big', resources: { cpu_slots: 2 } });
      const later = await submit(t, alice, { name: 'later' });
      expect(await startOrder(t, [small, big, later])).toEqual(['small', 'big', 'later']);
      const waiting = (await t.request('GET', `/v1/jobs/${gpuJob}`)).body;
      expect(waiting.state).toBe('queued');
      expect((await t.request('POST', `/v1/jobs/${gpuJob}/cancel`)).body.state).toBe('cancelled');
    } finally {
      await t.close();
    }
  });
});
