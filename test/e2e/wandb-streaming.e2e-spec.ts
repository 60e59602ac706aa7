import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFakeWandb, type FakeWandb, type FakeWandbRun } from '../support/fake-wandb';
import { startTestApp, TestApp, waitFor, waitForState } from '../support/test-app';
import { bySeries, historyPoints, readOfflineRun, tinyTrainSpec, type HistoryRow, type MetricPoint as Point } from '../support/train-metrics';
import { unusedPort } from '../support/unused-port';

const SLOW = 240_000;
const FIXTURES = join(process.cwd(), 'test', 'fixtures');
/** Made by test/metrics/setup-readers.sh: the real wandb SDK (0.28.2), for `wandb sync`. */
const WANDB = join(process.cwd(), '.venv-metrics', 'bin', 'wandb');
/** Keys of a local W&B server's shape (the SDK wants 40 characters after `local-`). */
const USER_KEY = 'local-0123456789abcdef0123456789abcdef00user01';
const OPERATOR_KEY = 'local-0123456789abcdef0123456789abcdef00oper01';

const trainSpec = (trainer: Record<string, unknown>, overrides: Record<string, unknown> = {}) => tinyTrainSpec({ name: 'streamed', trainer, ...overrides });
const offlineRun = (home: string, jobId: string) => readOfflineRun(join(home, 'jobs', jobId, 'work'));

/** What the fake server holds of a run: history rows, summary, console lines without their times, config values. */
function streamed(run: FakeWandbRun) {
  const config = Object.fromEntries(Object.entries(run.config).map(([k, v]) => [k, (v as { value: unknown }).value]));
  const metrics = (config._wandb as { m: Array<Record<string, unknown>> }).m;
  return {
    rows: (run.files['wandb-history.jsonl'] ?? []).map((l) => JSON.parse(l) as HistoryRow),
    summary: JSON.parse(run.files['wandb-summary.json']?.at(-1) ?? '{}') as Record<string, unknown>,
    output: (run.files['output.log'] ?? []).map((l) => l.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6} /, '')),
    times: (run.files['output.log'] ?? []).map((l) => l.slice(0, 26)),
    config: Object.fromEntries(Object.entries(config).filter(([k]) => k !== '_wandb')),
    // Each metric with the name of the metric it is plotted against (`"5"` is a 1-based index into the list).
    metrics: Object.fromEntries(metrics.map((m) => [m['1'], m['5'] === undefined ? null : metrics[(m['5'] as number) - 1]['1']])),
  };
}

async function jobLog(t: TestApp, id: string): Promise<string> {
  return (await t.request('GET', `/v1/jobs/${id}/logs`)).text;
}

describe('trainer.logger wandb with trainer.wandb.api_key: the run streams to W&B while the job runs', () => {
  let t: TestApp;
  let w: FakeWandb;
  const saved = { key: process.env.WANDB_API_KEY, url: process.env.WANDB_BASE_URL };

  beforeAll(async () => {
    w = await startFakeWandb({ key: USER_KEY });
    // The operator's own W&B settings on the worker: no job may stream with them.
    process.env.WANDB_API_KEY = OPERATOR_KEY;
    process.env.WANDB_BASE_URL = w.url;
    t = await startTestApp({ config: { plugins_dir: join(FIXTURES, 'plugins-train'), wandb_stream_seconds: 0.2, wandb_finish_seconds: 8 } });
  }, SLOW);
  afterAll(async () => {
    await t.close();
    await w.close();
    for (const [k, v] of [
      ['WANDB_API_KEY', saved.key],
      ['WANDB_BASE_URL', saved.url],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it(
    'streams the rows, summary, config and console the API and the offline run hold, with the user key only; the real SDK sends the same for the offline run',
    async () => {
      const environment = { id: 'math', token: 'hidden-token', config: { style: 'equation', difficulty: 1, test_size: 4 } };
      const submitted = await t.request('POST', '/v1/jobs', {
        body: trainSpec(
          { logger: ['console', 'wandb'], project_name: 'ot-stream', wandb: { api_key: USER_KEY, base_url: w.url } },
          { environment, sft: { steps: 2, batch_size: 4, examples: 8 } },
        ),
      });
      expect(submitted.status).toBe(201);
      expect(submitted.text).not.toContain(USER_KEY);
      const id = submitted.body.id as string;
      const done = await waitForState(t, id, ['succeeded', 'failed', 'cancelled'], 150_000);
      expect([done.state, done.error ?? null]).toEqual(['succeeded', null]);
      // The API shows where the run streams, never the key.
      expect(done.spec.trainer).toEqual({ logger: ['console', 'wandb'], project_name: 'ot-stream', wandb: { base_url: w.url } });

      const api = (await t.request('GET', `/v1/jobs/${id}/metrics?limit=100000`)).body as Point[];
      expect(api.some((p) => p.name === 'sft/loss') && api.some((p) => p.name === 'critic/score/mean')).toBe(true);
      const offline = offlineRun(t.home, id);
      const run = w.runs.get(offline.runId)!;
      expect(run).toBeDefined();
      const got = streamed(run);

      // History: every row of the offline run, in order, at consecutive offsets; the same values as the API.
      expect(got.rows).toEqual(offline.rows);
      expect(run.gaps).toEqual([]);
      expect(bySeries(historyPoints(got.rows))).toEqual(bySeries(api));
      for (const row of got.rows) {
        expect(Number.isInteger(row._step) && typeof row._runtime === 'number' && typeof row._timestamp === 'number').toBe(true);
      }
      expect(got.rows.map((r) => r._step)).toEqual(got.rows.map((_, i) => i));
      // Summary and config: the offline run's; the config is the spec the API shows (no token, no key).
      expect(got.summary).toEqual(offline.summary);
      expect(got.config).toEqual(done.spec);
      expect(got.metrics).toMatchObject({ global_step: null, 'sft/step': null, 'sft/loss': 'sft/step', 'actor/pg_loss': 'global_step', 'critic/score/mean': 'global_step' });
      expect(got.output).toEqual(expect.arrayContaining([expect.stringMatching(/^step 3\/3 reward/)]));
      expect(run.upserts[0]).toMatchObject({ project: 'ot-stream', displayName: 'streamed', jobType: 'train', tags: ['opentinker', `job:${id}`], program: 'opentinker' });
      expect([run.complete, run.exitcode]).toEqual([true, 0]);

      // Only the user's key ever reached W&B: the worker's WANDB_API_KEY and WANDB_BASE_URL are not the job's.
      expect(new Set(w.requests.map((r) => r.authorization))).toEqual(new Set([`Basic ${Buffer.from(`api:${USER_KEY}`).toString('base64')}`]));
      // The key is nowhere a user or an artifact reader sees: log, API answers, the job's files.
      const log = await jobLog(t, id);
      expect(log).toMatch(new RegExp(`wandb: streaming run ${offline.runId} to ${w.url.replace(/[.]/g, '\\.')} \\(fake-entity/ot-stream\\)`));
      expect(log).toMatch(/wandb: run \w{8} streamed and marked finished on W&B/);
      for (const text of [log, (await t.request('GET', `/v1/jobs/${id}`)).text, (await t.request('GET', '/v1/jobs')).text, ...filesUnder(join(t.home, 'jobs', id))]) {
        expect(text.includes(USER_KEY)).toBe(false);
      }

      // The real SDK: `wandb sync` of the job's offline run against a second fake server sends the same history lines,
      // summary, config, metric definitions and console lines.
      if (!existsSync(WANDB)) {
        console.log(`wandb streaming: skipping the real SDK check: ${WANDB} is missing (run test/metrics/setup-readers.sh)`);
        return;
      }
      const sdk = await startFakeWandb({ key: USER_KEY });
      const home = mkdtempSync(join(tmpdir(), 'ot-wandb-sdk-'));
      try {
        const env = { PATH: process.env.PATH, HOME: home, WANDB_DIR: home, WANDB_CONFIG_DIR: home, WANDB_BASE_URL: sdk.url, WANDB_API_KEY: USER_KEY };
        await promisify(execFile)(WANDB, ['sync', offline.dir], { env, timeout: 120_000 });
        const theirs = streamed(sdk.runs.get(offline.runId)!);
        expect(theirs.rows).toEqual(got.rows);
        expect(sdk.runs.get(offline.runId)!.gaps).toEqual([]);
        expect(theirs.summary).toEqual(got.summary);
        expect(theirs.config).toEqual(got.config);
        expect(theirs.metrics).toEqual(got.metrics);
        expect(theirs.output).toEqual(got.output);
        // The same time format on console lines (wandb-core's legacy output.log line).
        expect(new Set([...theirs.times, ...got.times].map((s) => s.replace(/\d/g, '0')))).toEqual(new Set(['0000-00-00T00:00:00.000000']));
        const sdkRun = sdk.runs.get(offline.runId)!;
        expect([sdkRun.complete, sdkRun.exitcode]).toEqual([true, 0]);
        for (const field of ['name', 'project', 'displayName', 'jobType', 'tags'] as const)
          expect({ field, value: run.upserts[0][field] }).toEqual({ field, value: sdkRun.upserts[0][field] });
        // Requests look alike: the file-stream bodies' keys and the history offsets they start at.
        const shape = (f: FakeWandbRun) => f.fileStream.flatMap((b) => Object.keys(b).filter((k) => k !== 'uploaded'));
        expect(new Set(shape(run))).toEqual(new Set(shape(sdkRun)));
      } finally {
        await sdk.close();
        rmSync(home, { recursive: true, force: true });
      }
    },
    SLOW,
  );

  it(
    'never fails the job: W&B refusing the key, down from the start, answering 500s, dying mid-run; the log says what happened and how to upload',
    async () => {
      const flaky = await startFakeWandb({ key: USER_KEY });
      const dying = await startFakeWandb({ key: USER_KEY });
      try {
        // One failure each of GraphQL and the file stream: wandb-core's first retry waits 2–2.5 s.
        flaky.fail('graphql', 503, 1);
        flaky.fail('file_stream', 500, 1);
        const down = `http://127.0.0.1:${await unusedPort()}`;
        const cases = {
          refused: { api_key: 'local-0123456789abcdef0123456789abcdef00wrong0', base_url: w.url },
          down: { api_key: USER_KEY, base_url: down },
          flaky: { api_key: USER_KEY, base_url: flaky.url },
          dying: { api_key: USER_KEY, base_url: dying.url },
        };
        const ids: Record<string, string> = {};
        for (const [name, wandb] of Object.entries(cases)) {
          const res = await t.request('POST', '/v1/jobs', { body: trainSpec({ logger: ['wandb'], wandb }, { name, total_steps: name === 'dying' ? 8 : 3 }) });
          expect(res.status).toBe(201);
          ids[name] = res.body.id;
        }
        // The dying server stops answering after the run's first rows arrive.
        await waitFor(async () => dying.requests.some((r) => r.path.endsWith('/file_stream')), 150_000, 100);
        await dying.die();
        const logs: Record<string, string> = {};
        for (const [name, id] of Object.entries(ids)) {
          const done = await waitForState(t, id, ['succeeded', 'failed', 'cancelled'], 200_000);
          expect({ name, state: done.state, error: done.error ?? null }).toEqual({ name, state: 'succeeded', error: null });
          logs[name] = await jobLog(t, id);
          expect(logs[name]).not.toContain('0wrong0');
          const artifact = `wandb-${offlineRun(t.home, id).folder}.tar`;
          const artifacts = ((await t.request('GET', `/v1/jobs/${id}/artifacts`)).body as Array<{ name: string }>).map((a) => a.name);
          expect(artifacts).toContain(artifact);
          if (name !== 'flaky') expect(logs[name]).toContain(`Nothing is lost: the offline run has every row; download the artifact ${artifact}`);
        }
        expect(logs.refused).toMatch(/wandb: streaming to W&B stopped: UpsertBucket: W&B refused the API key \(HTTP 401\); check WANDB_API_KEY\./);
        expect(logs.down).toMatch(/wandb: UpsertBucket: W&B at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED\); retrying/);
        expect(logs.down).toMatch(/streaming to W&B stopped: W&B did not take the end of the run within 8 s \(setting wandb_finish_seconds\); the last try: W&B is unreachable/);
        expect(logs.flaky).toMatch(/UpsertBucket: W&B at .* answered HTTP 503; retrying/);
        expect(logs.flaky).toMatch(/W&B answers again \(UpsertBucket\)/);
        expect(logs.flaky).toMatch(/file stream: W&B at .* answered HTTP 500; retrying/);
        expect(logs.flaky).toMatch(/W&B answers again \(file stream\)/);
        expect(logs.flaky).toMatch(/streamed and marked finished on W&B/);
        expect(logs.dying).toMatch(/streaming to W&B stopped: .*Not streamed: \d+ history rows? \(_step \d+(–\d+)?\)/);

        // What arrived is right: all of it from the flaky server, a prefix from the dying one.
        const api = async (id: string) => (await t.request('GET', `/v1/jobs/${id}/metrics?limit=100000`)).body as Point[];
        const flakyRows = streamed(flaky.runs.get(offlineRun(t.home, ids.flaky).runId)!).rows;
        expect(bySeries(historyPoints(flakyRows))).toEqual(bySeries(await api(ids.flaky)));
        const dyingOffline = offlineRun(t.home, ids.dying);
        const dyingRows = streamed(dying.runs.get(dyingOffline.runId)!).rows;
        expect(dyingRows.length).toBeGreaterThan(0);
        expect(dyingRows.length).toBeLessThan(dyingOffline.rows.length);
        expect(dyingRows).toEqual(dyingOffline.rows.slice(0, dyingRows.length));
      } finally {
        await flaky.close();
        await dying.close();
      }
    },
    SLOW * 2,
  );

  it('refuses trainer.wandb without the wandb logger, and a project name W&B would refuse, naming the field', async () => {
    const noLogger = await t.request('POST', '/v1/jobs', { body: trainSpec({ logger: ['console'], wandb: { api_key: USER_KEY } }) });
    expect([noLogger.status, noLogger.body.field]).toEqual([400, 'trainer.wandb']);
    expect(noLogger.body.message).toContain('add wandb to trainer.logger');
    expect(noLogger.text).not.toContain(USER_KEY);
    const badProject = await t.request('POST', '/v1/jobs', { body: trainSpec({ logger: ['wandb'], project_name: 'a/b' }) });
    expect([badProject.status, badProject.body.field]).toEqual([400, 'trainer.project_name']);
  });
});

/** The text of every file under `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'));
}
