import { jest } from '@jest/globals';
import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor, waitForState, type TestApp } from '../support/test-app';
import { startTenants } from './tenants';

jest.setTimeout(90_000);

/** More queued jobs than the dispatcher of the code before fair share looked at (its window was 200). */
const FLOOD = 250;

const sleepJob = (over: Record<string, unknown> = {}) => ({ kind: 'sleep', steps: 1, step_seconds: 0, ...over });
const submit = async (t: TestApp, key: string, over: Record<string, unknown> = {}) => {
  const res = await t.request('POST', '/v1/jobs', { key, body: sleepJob(over) });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
/** `n` submissions, a few at a time. */
const flood = async (t: TestApp, key: string, n: number, over: Record<string, unknown> = {}) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 25) ids.push(...(await Promise.all(Array.from({ length: Math.min(25, n - i) }, () => submit(t, key, over)))));
  return ids;
};
const jobOf = async (t: TestApp, id: string) => (await t.request('GET', `/v1/jobs/${id}`)).body;

/** Queue starvation: one user's many queued jobs must not keep another user's job from a free device. */
describe('fair scheduling between tenants', () => {
  it("starts B's job on a free slot while A, at her running limit, has more queued jobs than any window", async () => {
    const { t, alice, bob } = await startTenants({ worker: true, config: { cpu_slots: 2, max_jobs_per_user: 1 } });
    try {
      const blocker = await submit(t, alice, { steps: 600, step_seconds: 0.1 });
      await waitForState(t, blocker, ['running']);
      const queued = await flood(t, alice, FLOOD);
      const bobs = await submit(t, bob);
      await waitForState(t, bobs, ['succeeded'], 20_000);
      // A held her one running job the whole time, and none of hers overtook her limit.
      expect((await jobOf(t, blocker)).state).toBe('running');
      expect((await jobOf(t, queued[queued.length - 1])).state).toBe('queued');
    } finally {
      await t.close();
    }
  });

  it("gives a freed device to the user whose turn it is, not to the other user's older queued jobs", async () => {
    const { t, alice, bob } = await startTenants({ worker: true, config: { cpu_slots: 1, max_jobs_per_user: 4 } });
    try {
      const blocker = await submit(t, alice, { steps: 600, step_seconds: 0.1 });
      await waitForState(t, blocker, ['running']);
      const queued = await flood(t, alice, 30);
      const bobs = await submit(t, bob);
      expect((await t.request('POST', `/v1/jobs/${blocker}/cancel`, { key: alice })).status).toBe(202);
      const done = await waitForState(t, bobs, ['succeeded'], 20_000);
      for (const id of queued) {
        const job = await jobOf(t, id);
        if (job.started_at) expect(Date.parse(job.started_at)).toBeGreaterThanOrEqual(Date.parse(done.finished_at));
      }
    } finally {
      await t.close();
    }
  });

  it('refuses a plain user’s submission past max_queued_jobs_per_user with 429 naming the setting, and only hers', async () => {
    const { t, alice, bob } = await startTenants({ config: { max_queued_jobs_per_user: 3 } });
    try {
      const mine = await flood(t, alice, 3);
      const refused = await t.request('POST', '/v1/jobs', { key: alice, body: sleepJob() });
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'OT_ERR_QUEUED_JOBS_LIMIT', details: { setting: 'max_queued_jobs_per_user', limit: 3 } });
      expect(refused.body.message).toMatch(/3 queued jobs.*max_queued_jobs_per_user/);
      expect(refused.headers['retry-after']).toBeDefined();
      expect((await t.request('GET', '/v1/jobs', { key: alice })).body.total).toBe(3);
      // Another user is not affected; the admin is exempt.
      await submit(t, bob);
      await flood(t, t.adminKey, 4);
      // A cancelled job no longer counts.
      await t.request('POST', `/v1/jobs/${mine[0]}/cancel`, { key: alice });
      await submit(t, alice);
    } finally {
      await t.close();
    }
  });
});

/** Chat model servers hold CPU slots: the device list shows them, and a queued job evicts an idle one. */
describe('model servers and the device pool', () => {
  it('shows the slots model servers hold, without whose model, and gives an idle one’s slot to a queued job', async () => {
    const { t, alice, bob } = await startTenants({ worker: true, config: { cpu_slots: 2, serving_idle_seconds: 600 } });
    try {
      const trained = await submit(t, alice, { name: 'two-checkpoints' });
      await waitForState(t, trained, ['succeeded']);
      const config = { ...modelPreset('tiny-char'), max_position_embeddings: 64 };
      for (const step of [1, 2]) {
        const dir = join(t.home, 'jobs', trained, 'work', 'checkpoints', `step-${step}`);
        await saveHfModelDir(join(dir, 'model'), { config, weights: initWeights(config, step), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
        writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ step, created: '2026-12-01T00:00:00.000Z' }));
      }
      for (const step of [1, 2]) {
        const chat = await t.request('POST', '/v1/chat/completions', {
          key: alice,
          body: { model: `${trained}/step-${step}`, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 },
        });
        expect(chat.status).toBe(200);
      }

      // Both slots are held by model servers, and B sees that much only.
      const slots = async () => (await t.request('GET', '/v1/devices', { key: bob })).body.flatMap((w: { devices: unknown[] }) => w.devices);
      const held = await waitFor(async () => {
        const devices = await slots();
        return devices.every((d: { held_by: string | null }) => d.held_by === 'model_server') && devices;
      });
      expect(held).toHaveLength(2);
      for (const d of held) {
        expect(d).toMatchObject({ busy: true, held_by: 'model_server', job_id: null });
        expect(JSON.stringify(d)).not.toContain(trained);
      }

      // A job needing one slot does not wait for the idle timeout: it evicts one idle model server.
      const bobs = await submit(t, bob);
      await waitForState(t, bobs, ['succeeded'], 20_000);
      const after = await waitFor(async () => {
        const devices = await slots();
        return devices.filter((d: { held_by: string | null }) => d.held_by === 'model_server').length === 1 && devices;
      });
      expect(after.filter((d: { busy: boolean }) => !d.busy)).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
});
