import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../support/cli-process';

/**
 * `opentinker quickstart --quick` of the real binary (built by `npm run build`): every phase of the
 * quickstart (in-process server, SFT, GRPO, inference with the SFT-only and final checkpoints) in a
 * fresh data folder, sized to take seconds. It learns nothing at this size; the full run is measured by
 * test/bench/quickstart.bench.js.
 */
describe('opentinker quickstart --quick', () => {
  let home: string;

  function quickstart(args: string[]): Promise<CliRun> {
    const env: NodeJS.ProcessEnv = { ...process.env, OPENTINKER_HOME: home };
    for (const k of ['OPENTINKER_URL', 'OPENTINKER_API_KEY', 'OPENTINKER_ADMIN_KEY', 'OPENTINKER_DATABASE_URL', 'OPENTINKER_REDIS_URL']) delete env[k];
    return runCli(['quickstart', '--quick', ...args], { env, cwd: home });
  }

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'quickstart-'));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('trains, evaluates both checkpoints on held-out problems and reports them as JSON', async () => {
    const run = await quickstart(['--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]);
    expect(summary).toMatchObject({ state: 'succeeded', eval_tasks: 20, size: { rlSteps: 2, sftSteps: 10 } });
    expect(summary.admin_key).toMatch(/^otk_/);
    for (const acc of [summary.accuracy_sft, summary.accuracy_rl, summary.sampled_accuracy_sft, summary.sampled_accuracy_rl]) {
      expect(acc).toBeGreaterThanOrEqual(0);
      expect(acc).toBeLessThanOrEqual(1);
    }
    // The training curve: validations before the first GRPO step and after the last (--quick validates only those).
    expect(summary.val_accuracy.map((p: { step: number }) => p.step)).toEqual([0, 2]);
    for (const p of summary.val_accuracy) {
      expect(p.value).toBeGreaterThanOrEqual(0);
      expect(p.value).toBeLessThanOrEqual(1);
    }
    expect(summary.checkpoint_sft).toBe(join(home, 'jobs', summary.train_job, 'work', 'checkpoints', 'step-0', 'model'));
    expect(summary.checkpoint).toBe(join(home, 'jobs', summary.train_job, 'work', 'checkpoints', 'step-2', 'model'));
    expect(JSON.parse(readFileSync(join(summary.checkpoint, 'config.json'), 'utf8'))).toMatchObject({ model_type: 'llama', hidden_size: 128 });
    expect(summary.seconds.sft).toBeGreaterThan(0);
    expect(summary.seconds.rl).toBeGreaterThan(0);
    expect(summary.seconds.total).toBeLessThan(120);
  }, 180_000);

  it('runs again on the same data folder with a key of its own, printing the before/after table', async () => {
    const started = Date.now();
    const run = await quickstart(['--steps', '1']);
    const seconds = (Date.now() - started) / 1000;
    expect(run.code).toBe(0);
    // Piped, the training progress comes at a bounded rate: short lines, one per 5 s and each phase (SFT, RL), never one per step.
    const progress = run.stdout.split('\n').filter((l) => l.startsWith('progress '));
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.length).toBeLessThanOrEqual(4 + Math.ceil(seconds / 5));
    expect(run.stdout).not.toMatch(/^metrics step/m);
    expect(run.stdout.split('\n').every((l) => l.length <= 200)).toBe(true);
    expect(run.stdout).not.toContain('Created the admin user');
    expect(run.stdout).toMatch(/after SFT only\s+\d+\.\d%\s+\d+\.\d%\s+job:[0-9a-f-]{36}\/step-0\n/);
    expect(run.stdout).toMatch(/after SFT \+ GRPO\s+\d+\.\d%\s+\d+\.\d%\s+job:[0-9a-f-]{36}\n/);
    expect(run.stdout).toMatch(/RL gain \(points\)\s+[+-]\d+\.\d\s+[+-]\d+\.\d/);
    const dir = /Checkpoint \(a Hugging Face model folder\): (\S+)/.exec(run.stdout)![1];
    expect(existsSync(join(dir, 'model.safetensors'))).toBe(true);
    expect(dir).toContain(join('checkpoints', 'step-1', 'model'));
  }, 180_000);
});
