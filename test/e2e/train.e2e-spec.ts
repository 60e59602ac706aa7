import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';
import { tinyTrainSpec as trainSpec } from '../support/train-metrics';
import { unusedPort } from '../support/unused-port';
import { processesUnder } from '../support/worker-process';

const SLOW = 120_000;

const FIXTURES = join(process.cwd(), 'test', 'fixtures');

describe('train jobs through the HTTP API', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ config: { plugins_dir: join(FIXTURES, 'plugins-train') } });
  }, SLOW);
  afterAll(async () => {
    await t.close();
  });

  const submit = async (body: Record<string, unknown>) => {
    const res = await t.request('POST', '/v1/jobs', { body });
    expect(res.status).toBe(201);
    return res.body as { id: string };
  };
  const series = async (id: string, name: string) =>
    (await t.request('GET', `/v1/jobs/${id}/metrics?name=${encodeURIComponent(name)}`)).body as Array<{ step: number; value: number }>;
  const workDir = (id: string) => join(t.home, 'jobs', id, 'work');

  it(
    'runs 3 steps after an SFT warm-up: metrics per step, validation, checkpoints step-0 and step-3',
    async () => {
      const job = await submit(trainSpec({ sft: { steps: 2, batch_size: 4, examples: 8 } }));
      const done = await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      expect(done.progress).toMatchObject({ step: 3, total: 3 });
      expect(done.progress.message).toMatch(/^reward \d\.\d\d acc \d\.\d\d$/);

      expect((await series(job.id, 'reward/mean')).map((p) => p.step)).toEqual([1, 2, 3]);
      expect((await series(job.id, 'val/accuracy')).map((p) => p.step)).toEqual([0, 3]);
      expect((await series(job.id, 'sft/loss')).map((p) => p.step)).toEqual([1, 2]);
      for (const name of ['actor/pg_loss', 'actor/grad_norm', 'actor/lr', 'timing/rollout_s', 'timing/update_s', 'perf/sampled_tokens_per_s']) {
        expect((await series(job.id, name)).length).toBe(3);
      }

      const step3 = join(workDir(job.id), 'checkpoints', 'step-3');
      expect(existsSync(join(step3, 'model', 'config.json'))).toBe(true);
      expect(existsSync(join(step3, 'optimizer.safetensors'))).toBe(true);
      const state = JSON.parse(readFileSync(join(step3, 'trainer_state.json'), 'utf8'));
      expect(state).toMatchObject({ step: 3, total_steps: 3, sft_steps: 2 });
      expect(existsSync(join(workDir(job.id), 'checkpoints', 'step-0', 'model', 'config.json'))).toBe(true);
      const logs = (await t.request('GET', `/v1/jobs/${job.id}/logs`)).text;
      expect(logs).toMatch(/step 3\/3 reward/);
      expect(logs).toMatch(/saved checkpoint step-3/);
    },
    SLOW,
  );

  it(
    'refuses rollout_n 0 at submit, naming the field',
    async () => {
      const res = await t.request('POST', '/v1/jobs', { body: trainSpec({ algorithm: { rollout_n: 0 } }) });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'OT_ERR_VALIDATION', field: 'algorithm.rollout_n' });
    },
    SLOW,
  );

  it(
    'refuses full fine-tuning of a model too large for the engine heap at submit, pointing at LoRA; accepts it with LoRA',
    async () => {
      const full = await t.request('POST', '/v1/jobs', { body: trainSpec({ model: { preset: 'qwen2.5-0.5b' } }) });
      expect(full.status).toBe(400);
      expect(full.body).toMatchObject({ code: 'OT_ERR_LIMIT_EXCEEDED', field: 'model.lora' });
      expect((full.body as { message: string }).message).toMatch(/full fine-tuning of this \d+M-parameter model needs [\d.]+ GiB .*Train LoRA adapters instead/);
      const lora = await t.request('POST', '/v1/jobs', { body: trainSpec({ model: { preset: 'qwen2.5-0.5b', lora: { rank: 8 } }, total_steps: 1 }) });
      expect(lora.status).toBe(201);
      await t.request('POST', `/v1/jobs/${(lora.body as { id: string }).id}/cancel`);
    },
    SLOW,
  );

  it(
    'fails a job whose environment throws on reset, with the error in the job and its log',
    async () => {
      const job = await submit(trainSpec({ environment: { id: 'reset-throws' }, rollout: { max_new_tokens: 4, env_retries: 1 } }));
      const done = await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 60_000);
      expect(done.state).toBe('failed');
      expect(done.error).toContain('Environment reset-throws failed every episode of the validation before training');
      expect(done.error).toContain('the game server is down');
      expect((await t.request('GET', `/v1/jobs/${job.id}/logs`)).text).toContain('the game server is down');
    },
    SLOW,
  );

  it(
    'fails a job whose environment.url is unreachable, naming the URL and nothing about the port',
    async () => {
      const url = `http://127.0.0.1:${await unusedPort()}`;
      const job = await submit(trainSpec({ environment: { id: 'math', url } }));
      const done = await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 60_000);
      expect(done.state).toBe('failed');
      expect(done.error).toBe(`environment.url: Environment server ${url} is unreachable`);
    },
    SLOW,
  );

  it(
    'cancels mid-rollout: the job ends cancelled, its runner is gone and its device is free',
    async () => {
      // A slow grader holds every rollout for seconds: the cancel lands while episodes wait on it.
      const job = await submit(
        trainSpec({
          environment: { id: 'slow-step', config: { delay_ms: 20_000 } },
          total_steps: 100,
          val_before_train: false,
          rollout: { max_new_tokens: 4, env_timeout_seconds: 60 },
        }),
      );
      await waitFor(async () => ((await t.request('GET', `/v1/jobs/${job.id}/logs`)).text.includes('train: ') ? true : undefined), 60_000);
      const asked = Date.now();
      expect((await t.request('POST', `/v1/jobs/${job.id}/cancel`)).status).toBe(202);
      const ended = await waitForState(t, job.id, ['cancelled', 'failed', 'succeeded'], 30_000);
      expect(ended.state).toBe('cancelled');
      expect(Date.now() - asked).toBeLessThan(10_000);
      await waitFor(async () => processesUnder(join(t.home, 'jobs', job.id)).length === 0, 10_000);
      const devices = (await t.request('GET', '/v1/devices')).body as Array<{ devices: Array<{ job_id: string | null }> }>;
      expect(devices.flatMap((w) => w.devices).some((d) => d.job_id === job.id)).toBe(false);
      expect((await t.request('GET', `/v1/jobs/${job.id}/logs`)).text).toMatch(/stopped during step 1 \(cancelled\); no checkpoint written/);
      expect(existsSync(join(workDir(job.id), 'checkpoints'))).toBe(false);
    },
    SLOW,
  );

  it(
    'resumes from its checkpoint after its runner is killed, and ends at the same step count',
    async () => {
      const total = 12;
      const job = await submit(trainSpec({ total_steps: total, save_freq: 2, max_checkpoints: 2, val_before_train: false, max_attempts: 2 }));
      const jobDir = join(t.home, 'jobs', job.id);
      await waitFor(async () => existsSync(join(workDir(job.id), 'checkpoints', 'step-4')), 60_000);
      const [pid] = processesUnder(jobDir);
      expect(pid).toBeDefined();
      process.kill(pid, 'SIGKILL');

      const done = await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 90_000);
      expect(done.error ?? null).toBeNull();
      expect(done).toMatchObject({ state: 'succeeded', attempts: 2 });
      expect(done.progress).toMatchObject({ step: total, total });
      const logs = (await t.request('GET', `/v1/jobs/${job.id}/logs`)).text;
      const resumed = Number(/resuming from step (\d+)/.exec(logs)?.[1]);
      expect(resumed).toBeGreaterThanOrEqual(4);
      expect(resumed % 2).toBe(0);
      const steps = (await series(job.id, 'reward/mean')).map((p) => p.step);
      expect(Math.max(...steps)).toBe(total);
      // Every step ran; the points of the steps the lost attempt ran after its checkpoint were replaced.
      expect(steps).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      const state = JSON.parse(readFileSync(join(workDir(job.id), 'checkpoints', `step-${total}`, 'trainer_state.json'), 'utf8'));
      expect(state).toMatchObject({ step: total, total_steps: total });
      expect(existsSync(join(workDir(job.id), 'checkpoints', 'step-2'))).toBe(false); // pruned to max_checkpoints
    },
    SLOW,
  );
});
