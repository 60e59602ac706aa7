import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeWandb, type FakeWandb } from '../../test/support/fake-wandb';
import type { RunContext } from '../runner/run-context';
import { MetricLoggers, type MetricLoggingSpec } from './metric-loggers';

const KEY = 'local-0123456789abcdef0123456789abcdef00spec01';

/** A job runner's context for the loggers: a work folder, the W&B settings of a worker, a log and artifacts. */
function context(workDir: string, logs: string[], artifacts: string[]): RunContext {
  return {
    jobId: 'job-1',
    spec: { kind: 'train', name: 'resumable', trainer: { logger: ['wandb'], wandb: { api_key: KEY } } },
    workDir,
    policy: { wandb: { streamSeconds: 0.02, finishSeconds: 5 } },
    log: (line: string) => logs.push(line),
    artifact: (name: string) => artifacts.push(name),
  } as unknown as RunContext;
}

describe('MetricLoggers with a W&B key', () => {
  let w: FakeWandb;
  let dir: string;
  beforeEach(async () => {
    w = await startFakeWandb({ key: KEY });
    dir = mkdtempSync(join(tmpdir(), 'ot-loggers-'));
  });
  afterEach(async () => {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('streams the offline run, and a resumed attempt continues the same W&B run where W&B left it', async () => {
    const spec: MetricLoggingSpec = { logger: ['wandb'], project_name: 'p', wandb: { api_key: KEY, base_url: w.url } };
    const logs: string[] = [];
    const artifacts: string[] = [];
    const first = new MetricLoggers(context(dir, logs, artifacts), spec, 'train', { wandbFetch: fetch });
    for (let step = 0; step <= 4; step++) first.metrics(step, { 'reward/mean': step });
    first.line('first attempt');
    await first.close(1);
    const runId = [...w.runs.keys()][0];
    expect(w.runs.get(runId)!.exitcode).toBe(1);
    expect(artifacts).toEqual([expect.stringMatching(new RegExp(`^wandb-offline-run-\\d{8}_\\d{6}-${runId}\\.tar$`))]);

    // The next attempt resumes from its checkpoint at step 2 and reports steps 3 to 6 again.
    const second = new MetricLoggers(context(dir, logs, artifacts), spec, 'train', { wandbFetch: fetch });
    second.resumed(2, ['sft/']);
    for (let step = 3; step <= 6; step++) second.metrics(step, { 'reward/mean': step * 10 });
    await second.close(0);
    const run = w.runs.get(runId)!;
    expect(w.runs.size).toBe(1);
    const rows = run.files['wandb-history.jsonl'].map((l) => JSON.parse(l) as Record<string, number>);
    // W&B had steps 0–4: rows up to there stay as they were, the resumed attempt's later rows follow.
    expect(rows.map((r) => [r._step, r['reward/mean']])).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
      [5, 50],
      [6, 60],
    ]);
    expect(run.gaps).toEqual([]);
    expect([run.complete, run.exitcode]).toEqual([true, 0]);
    expect(JSON.parse(run.files['wandb-summary.json'][0])).toMatchObject({ 'reward/mean': 60, _step: 6 });
    expect(logs.join('\n')).toMatch(new RegExp(`resuming W&B run ${runId} at history line 5 \\(its last _step is 4\\)`));
    expect(logs.join('\n')).toMatch(/already has steps up to 4; this attempt's rows up to there stay in the offline run only/);
  });

  it('writes the offline run only when the job has no key, or no way out', async () => {
    const logs: string[] = [];
    const noKey = new MetricLoggers(context(dir, logs, []), { logger: ['wandb'], project_name: 'p', wandb: { base_url: w.url } }, 'train', { wandbFetch: fetch });
    noKey.metrics(1, { 'reward/mean': 1 });
    await noKey.close(0);
    const noFetch = new MetricLoggers(context(join(dir, 'other'), logs, []), { logger: ['wandb'], project_name: 'p', wandb: { api_key: KEY, base_url: w.url } }, 'train');
    noFetch.metrics(1, { 'reward/mean': 1 });
    await noFetch.close(0);
    expect(w.requests).toEqual([]);
    expect(logs.join('\n')).toMatch(/cannot reach W&B \(no URL policy\): the run is offline only/);
  });
});
