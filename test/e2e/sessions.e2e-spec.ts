import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { OpenTinkerClient } from '@opentinker/client';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { startTestApp, TestApp, waitForState } from '../support/test-app';

const SLOW = 120_000;

/** A session small enough for seconds on a CPU: tiny-char on bare equations, 2 samples per task. */
const SESSION = {
  kind: 'session',
  environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
  model: { preset: 'tiny-char', chat_template: 'plain' },
  algorithm: { rollout_n: 2 },
  rollout: { max_new_tokens: 4 },
  optim: { lr: 1e-3 },
  batch_size: 2,
  val_batch_size: 4,
};

describe('client-driven training sessions', () => {
  let t: TestApp;
  let client: OpenTinkerClient;

  beforeAll(async () => {
    t = await startTestApp();
    const app = t.app as NestFastifyApplication;
    await app.listen(0, '127.0.0.1');
    client = new OpenTinkerClient({ baseUrl: await app.getUrl(), apiKey: t.adminKey });
  }, SLOW);
  afterAll(() => t.close());

  const call = (id: string, body: unknown, wait = 60) => t.request('POST', `/v1/jobs/${id}/calls?wait_seconds=${wait}`, { body });

  it(
    'trains step by step through calls; a retried train_step is applied once; close frees the job',
    async () => {
      const job = (await t.request('POST', '/v1/jobs', { body: SESSION })).body;
      const first = await call(job.id, { call_id: 's1', op: 'train_step', args: { batch_size: 2 } });
      expect(first.status).toBe(200);
      expect(first.body.state).toBe('succeeded');
      expect(first.body.result).toMatchObject({ step: 1 });
      expect(typeof first.body.result['reward/mean']).toBe('number');
      expect(typeof first.body.result['actor/grad_norm'] === 'number' || first.body.result['batch/rows_trained'] === 0).toBe(true);

      // The same call id again (a client retry): the recorded answer, no second step.
      const retry = await call(job.id, { call_id: 's1', op: 'train_step', args: { batch_size: 2 } });
      expect(retry.body.result).toEqual(first.body.result);
      const inline = await call(job.id, {
        call_id: 's2',
        op: 'train_step',
        args: { tasks: [{ prompt: [{ role: 'user', content: '2+2=' }], ground_truth: '4' }] },
      });
      expect(inline.body).toMatchObject({ state: 'succeeded', result: { step: 2 } });
      expect(((await t.request('GET', `/v1/jobs/${job.id}/metrics?name=reward/mean`)).body as { step: number }[]).map((p) => p.step)).toEqual([1, 2]);

      const val = await call(job.id, { call_id: 'v1', op: 'validate', args: { size: 4 } });
      expect(val.body.state).toBe('succeeded');
      expect(val.body.result['val/accuracy']).toBeGreaterThanOrEqual(0);

      const sample = await call(job.id, { call_id: 'p1', op: 'sample', args: { messages: [{ role: 'user', content: '1+1=' }], max_tokens: 3, temperature: 0 } });
      expect(sample.body.state).toBe('succeeded');
      expect(sample.body.result).toMatchObject({ finish_reason: expect.stringMatching(/^(stop|length)$/) });
      expect(sample.body.result.tokens).toBeLessThanOrEqual(3);

      const saved = await call(job.id, { call_id: 'c1', op: 'save_checkpoint' });
      expect(saved.body.result).toMatchObject({ step: 2, model_path: `job:${job.id}/step-2` });
      expect(existsSync(join(t.home, 'jobs', job.id, 'work', 'checkpoints', 'step-2', 'model', 'config.json'))).toBe(true);

      // A runner-side failure answers the call with the error and keeps the session alive.
      const bad = await call(job.id, { call_id: 'b1', op: 'validate', args: { indices: [99] } });
      expect(bad.body).toMatchObject({ state: 'failed', error: 'indices: 99 is outside the test split (4 tasks)' });

      const closed = await call(job.id, { call_id: 'x1', op: 'close' });
      expect(closed.body).toMatchObject({ state: 'succeeded', result: { steps: 2 } });
      expect((await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 30_000)).state).toBe('succeeded');
      expect((await call(job.id, { call_id: 'x2', op: 'close' })).body.code).toBe('OT_ERR_SESSION_CLOSED');
    },
    SLOW,
  );

  it(
    'drives a session with the client’s fit(), and closes an idle session by itself',
    async () => {
      const session = await client.sessions.start({ ...SESSION, idle_timeout_seconds: 5 } as never);
      const steps: number[] = [];
      const result = await session.fit({ steps: 2, batchSize: 2, testFreq: 1, valSize: 2, onStep: (s) => steps.push(s) });
      expect(steps).toEqual([1, 2]);
      expect(result.validations.map((v) => v.step)).toEqual([0, 1, 2]);
      expect(result.checkpoints).toEqual([expect.objectContaining({ step: 2 })]);
      // Running fit again with the same run id replays the recorded steps instead of training again.
      const again = await session.fit({ steps: 2, batchSize: 2, testFreq: 1, valSize: 2 });
      expect(again.history).toEqual(result.history);

      const done = await waitForState(t, session.id, ['succeeded', 'failed', 'cancelled'], 30_000);
      expect(done.state).toBe('succeeded');
      expect((await t.request('GET', `/v1/jobs/${session.id}/logs`)).text).toContain('no call for 5 s: closing the session');
      await expect(session.trainStep({}, { callId: 'late' })).rejects.toMatchObject({ code: 'OT_ERR_SESSION_CLOSED' });
    },
    SLOW,
  );
});
