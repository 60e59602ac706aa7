import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeScalarEvent, readTfRecords } from '../../src/metrics/tensorboard-writer';
import { startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';
import { bySeries, historyPoints, readOfflineRun, tinyTrainSpec, type MetricPoint as Point } from '../support/train-metrics';

const SLOW = 180_000;
const FIXTURES = join(process.cwd(), 'test', 'fixtures');
/** Made by test/metrics/setup-readers.sh: TensorBoard's and wandb's own readers. */
const PYTHON = join(process.cwd(), '.venv-metrics', 'bin', 'python');
const READER = join(process.cwd(), 'test', 'metrics', 'read_metrics.py');

const trainSpec = (overrides: Record<string, unknown> = {}) => tinyTrainSpec({ name: 'loggers', ...overrides });

describe('trainer.logger: TensorBoard and W&B files hold what the API reports', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ config: { plugins_dir: join(FIXTURES, 'plugins-train') } });
  }, SLOW);
  afterAll(async () => {
    await t.close();
  });

  it(
    'writes console lines, an event file and an offline run whose values equal the API series; both are artifacts',
    async () => {
      // The token (unused by a local plugin) stands for a secret that must stay out of the W&B run.
      const environment = { id: 'math', token: 'hidden-token', config: { style: 'equation', difficulty: 1, test_size: 4 } };
      const submitted = await t.request('POST', '/v1/jobs', {
        body: trainSpec({ environment, sft: { steps: 2, batch_size: 4, examples: 8 }, trainer: { logger: ['console', 'tensorboard', 'wandb'], project_name: 'ot-test' } }),
      });
      expect(submitted.status).toBe(201);
      const job = submitted.body as { id: string };
      const done = await waitForState(t, job.id, ['succeeded', 'failed', 'cancelled'], 120_000);
      expect(done.error ?? null).toBeNull();
      expect(done.state).toBe('succeeded');
      expect(done.spec.trainer).toEqual({ logger: ['console', 'tensorboard', 'wandb'], project_name: 'ot-test' });

      const api = (await t.request('GET', `/v1/jobs/${job.id}/metrics?limit=100000`)).body as Point[];
      expect(api.length).toBeGreaterThan(30);
      expect(api.some((p) => p.name === 'critic/score/mean')).toBe(true);
      const work = join(t.home, 'jobs', job.id, 'work');

      // The console: one verl line per report.
      const logs = (await t.request('GET', `/v1/jobs/${job.id}/logs`)).text;
      const pg3 = api.find((p) => p.name === 'actor/pg_loss' && p.step === 3)!;
      expect(logs).toMatch(new RegExp(`^step:3 - .*actor/pg_loss:${String(pg3.value).replace(/[.+-]/g, '\\$&')}`, 'm'));
      expect(logs).toMatch(/^step:1 - sft\/loss:/m);

      // TensorBoard: read back with this repo's decoder (float32 values).
      const tbDir = join(work, 'tensorboard');
      const [eventFile] = readdirSync(tbDir);
      const events = readTfRecords(readFileSync(join(tbDir, eventFile)))
        .map(decodeScalarEvent)
        .filter((e) => e !== null);
      const tb = bySeries(events.flatMap((e) => Object.entries(e!.values).map(([name, value]) => ({ step: e!.step, name, value }))));
      expect(tb).toEqual(bySeries(api, Math.fround));

      // W&B: history rows carry every API point at its step.
      const { folder: runFolder, dir: runDir, runId, rows } = readOfflineRun(work);
      expect(runFolder).toMatch(/^offline-run-\d{8}_\d{6}-[a-z0-9]{8}$/);
      const wb = bySeries(historyPoints(rows));
      expect(wb).toEqual(bySeries(api));
      expect(readFileSync(join(runDir, 'files', 'config.yaml'), 'utf8')).not.toContain('hidden-token');
      expect(readFileSync(join(runDir, 'files', 'output.log'), 'utf8')).toMatch(/step 3\/3 reward/);
      const summary = JSON.parse(readFileSync(join(runDir, 'files', 'wandb-summary.json'), 'utf8'));
      expect(summary['actor/pg_loss']).toBe(pg3.value);

      // Artifacts: the event file as is, the run folder as a tar.
      const artifacts = ((await t.request('GET', `/v1/jobs/${job.id}/artifacts`)).body as Array<{ name: string; size: number }>).map((a) => a.name);
      expect(artifacts).toEqual(expect.arrayContaining([eventFile, `wandb-${runFolder}.tar`]));
      const download = await t.request('GET', `/v1/jobs/${job.id}/artifacts/${encodeURIComponent(eventFile)}`);
      expect(download.status).toBe(200);
      expect(Number(download.headers['content-length'])).toBe(readFileSync(join(tbDir, eventFile)).length);

      // The independent readers: TensorBoard's EventAccumulator and wandb's DataStore.
      if (!existsSync(PYTHON)) {
        console.log(`metric loggers: skipping the TensorBoard/wandb reader check: ${PYTHON} is missing (run test/metrics/setup-readers.sh)`);
        return;
      }
      const read = JSON.parse(execFileSync(PYTHON, [READER, tbDir, runDir], { encoding: 'utf8', timeout: 120_000 }));
      expect(read.tensorboard).toEqual(bySeries(api, Math.fround));
      const pyWb = bySeries(historyPoints(read.wandb.history as Array<Record<string, number>>));
      expect(pyWb).toEqual(bySeries(api));
      expect(read.wandb.records.slice(0, 2)).toEqual(['header', 'run']);
      expect(read.wandb.records.slice(-3)).toEqual(['summary', 'exit', 'final']);
      expect(read.wandb.exit_code).toBe(0);
      expect(read.wandb.run).toMatchObject({ run_id: runId, project: 'ot-test', display_name: 'loggers' });
      expect(read.wandb.run.config.batch_size).toBe(2);
      expect(read.wandb.run.config.rollout.max_new_tokens).toBe(4);
      expect(JSON.stringify(read.wandb.run.config)).not.toContain('hidden-token');
    },
    SLOW,
  );

  it(
    'shows a running job step, reward mean and throughput in Prometheus, and drops them when it ends',
    async () => {
      const job = (await t.request('POST', '/v1/jobs', { body: trainSpec({ total_steps: 500, val_before_train: false }) })).body as { id: string };
      const line = (text: string, name: string) => text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`job_id="${job.id}"`));
      const scrape = async () => (await t.request('GET', '/metrics', { key: null })).text;
      const text = await waitFor(
        async () => {
          const s = await scrape();
          return line(s, 'opentinker_job_reward_mean') && line(s, 'opentinker_job_step') ? s : null;
        },
        60_000,
        200,
      );
      expect(line(text, 'opentinker_job_step')).toMatch(new RegExp(`^opentinker_job_step\\{job_id="${job.id}",kind="train"\\} [1-9]\\d*$`));
      const reward = Number(line(text, 'opentinker_job_reward_mean')!.split(' ').pop());
      const points = (await t.request('GET', `/v1/jobs/${job.id}/metrics?name=reward%2Fmean`)).body as Point[];
      expect(points.map((p) => p.value)).toContain(reward);
      expect(text).toMatch(new RegExp(`opentinker_job_tokens_per_second\\{job_id="${job.id}",kind="train",phase="sampling"\\} \\d`));
      expect(text).toMatch(new RegExp(`opentinker_job_tokens_per_second\\{job_id="${job.id}",kind="train",phase="training"\\} \\d`));

      await t.request('POST', `/v1/jobs/${job.id}/cancel`);
      await waitForState(t, job.id, ['cancelled'], 60_000);
      await new Promise((r) => setTimeout(r, 1100));
      expect(await scrape()).not.toContain(`job_id="${job.id}"`);
    },
    SLOW,
  );
});
