import { DataSource } from 'typeorm';
import { WorkerEntity } from '../../src/scheduler/worker.entity';
import { startTestApp } from '../support/test-app';

/**
 * Placement seen through the API. The order jobs start in (priority, age, the per-user limit, a big job
 * not overtaken) is the worker's, tested where it lives: src/scheduler/worker.service.spec.ts.
 */
describe('scheduling', () => {
  it('accepts a job only a worker the cluster has known could hold, and keeps it queued while none is here', async () => {
    const t = await startTestApp({ config: { cpu_slots: 2 } });
    try {
      const key = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
      const gpuJob = { kind: 'sleep', steps: 1, step_seconds: 0, resources: { gpus: 1 } };
      expect((await t.request('POST', '/v1/jobs', { key, body: gpuJob })).body).toMatchObject({ code: 'OT_ERR_UNSCHEDULABLE', field: 'resources.gpus' });
      // A GPU worker that has stopped: a GPU job is accepted, and waits for it.
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
      const id = (await t.request('POST', '/v1/jobs', { key, body: gpuJob })).body.id as string;
      expect((await t.request('GET', `/v1/jobs/${id}`)).body.state).toBe('queued');
      expect((await t.request('POST', `/v1/jobs/${id}/cancel`)).body.state).toBe('cancelled');
    } finally {
      await t.close();
    }
  });
});
