/**
 * A short train job (tiny-char on bare equations, 2 tasks × 2 samples, 1 step) runs with each advantage
 * estimator, loss mode and KL type added for verl b178a3c, in process through the `train` runner: the
 * spec parses, the estimator gets its inputs (the optimal token baselines need Σπ² from the policy),
 * and the update reports finite losses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Model, modelPreset, padBatch } from '@opentinker/engine';
import * as tf from '@tensorflow/tfjs-core';
import { trainKind } from './train.kind';
import type { RunContext, RunnerPaths } from '../../runner/run-context';
import type { RunnerPolicy } from '../../runner/runner-protocol';
import { ensureEngineBackend } from '../../rollout/policy';
import { scoreSumPiSquared, type UpdateRow } from '../../training/policy-update';
import { runTrain } from './train.runner';

const home = mkdtempSync(join(tmpdir(), 'ot-train-verl-'));
const paths: RunnerPaths = { hostRoot: process.cwd(), pluginsDir: join(home, 'plugins'), home, jobsDir: join(home, 'jobs'), datasetsDir: join(home, 'datasets'), modelRoots: [] };
const policy = {
  environmentHost: { limits: { sandbox_memory_mb: 1024 }, settings: {} },
  modelRoots: [],
  remoteEnvironments: { allow: [], allowPublic: true, allowLoopback: true },
} as unknown as RunnerPolicy;

afterAll(() => rmSync(home, { recursive: true, force: true }));

function spec(algorithm: Record<string, unknown>) {
  return trainKind.parse({
    kind: 'train',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 2 } },
    model: { preset: 'tiny-char', chat_template: 'plain' },
    algorithm: { rollout_n: 2, ...algorithm },
    rollout: { max_new_tokens: 4 },
    optim: { lr: 1e-3 },
    batch_size: 2,
    total_steps: 1,
    val_before_train: false,
    val_batch_size: 2,
  });
}

async function run(name: string, algorithm: Record<string, unknown>): Promise<{ metrics: Array<Record<string, number>>; logs: string[] }> {
  const metrics: Array<Record<string, number>> = [];
  const logs: string[] = [];
  // Cast, not annotated: the runner protocol may grow members this test does not need.
  const ctx = {
    jobId: name,
    spec: spec(algorithm),
    attempt: 1,
    resumeState: null,
    workDir: join(home, name),
    paths,
    signal: new AbortController().signal,
    log: (line: string) => logs.push(line),
    progress: () => undefined,
    metrics: (_step: number, values: Record<string, number>) => metrics.push(values),
    policy,
    checkpoint: () => undefined,
    artifact: () => undefined,
    resumed: () => undefined,
    calls: undefined as unknown as RunContext['calls'],
  } as unknown as Parameters<typeof runTrain>[0];
  await runTrain(ctx);
  return { metrics, logs };
}

const CASES: Array<[string, Record<string, unknown>]> = [
  ['grpo_vectorized', { adv_estimator: 'grpo_vectorized' }],
  ['rloo_vectorized', { adv_estimator: 'rloo_vectorized' }],
  ['optimal_token_baseline', { adv_estimator: 'optimal_token_baseline' }],
  ['tir_optimal_token_baseline', { adv_estimator: 'tir_optimal_token_baseline' }],
  ['sapo', { loss_mode: 'sapo', loss_agg_mode: 'seq-mean-token-mean' }],
  ['reinforce', { loss_mode: 'reinforce' }],
  ['k3_st', { kl_loss_coef: 0.01, kl_loss_type: 'k3_st' }],
  ['seq-mean-token-sum-norm', { loss_agg_mode: 'seq-mean-token-sum-norm' }],
];

describe('a 1-step train job with each estimator and loss mode added for verl b178a3c', () => {
  test.each(CASES)(
    '%s',
    async (name, algorithm) => {
      const { metrics, logs } = await run(name, algorithm);
      const step = metrics.find((m) => 'actor/pg_loss' in m);
      expect(step).toBeDefined();
      expect(Number.isFinite(step!['actor/pg_loss'])).toBe(true);
      expect(Number.isFinite(step!['actor/grad_norm'])).toBe(true);
      if ('kl_loss_coef' in algorithm) expect(Number.isFinite(step!['actor/kl_loss'])).toBe(true);
      expect(logs.join('\n')).toMatch(new RegExp(`; ${(algorithm.adv_estimator as string | undefined) ?? 'grpo'}, 1 steps`));
    },
    60_000,
  );
});

describe('scoreSumPiSquared', () => {
  test('is Σ softmax² of the logits that predicted each policy token, 0 elsewhere', async () => {
    await ensureEngineBackend();
    const model = Model.init({ ...modelPreset('tiny-test'), vocab_size: 260 }, 9);
    try {
      const ids = [10, 11, 12, 40, 41];
      const mask = Float32Array.from([0, 0, 0, 1, 1]);
      const [sums] = scoreSumPiSquared(model, [{ ids, mask } as unknown as UpdateRow], { padId: 0 });
      const expected = tf.tidy(() => tf.sum(tf.square(tf.softmax(model.logits(padBatch([ids])))), -1).dataSync());
      expect(Array.from(sums.slice(0, 3))).toEqual([0, 0, 0]);
      expect(sums[3]).toBeCloseTo(expected[2], 6);
      expect(sums[4]).toBeCloseTo(expected[3], 6);
    } finally {
      model.dispose();
    }
  });
});

describe('train spec', () => {
  test("refuses verl's '+' KL names (verl raises for them) and names the field", () => {
    expect(() => spec({ kl_loss_type: 'k3+' })).toThrow(expect.objectContaining({ field: 'algorithm.kl_loss_type' }));
  });

  test("sapo temperatures default to verl's", () => {
    expect(spec({ loss_mode: 'sapo' }).algorithm).toMatchObject({ loss_mode: 'sapo', tau_pos: 1, tau_neg: 1.05 });
  });
});
