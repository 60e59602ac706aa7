import { Model, modelPreset, padBatch, Trainer, type CoefficientSource, type CurrentScores, type LossCoefficients } from '@opentinker/engine';
import * as tf from '@tensorflow/tfjs-core';
import { ensureEngineBackend } from '../rollout/policy';
import { computeAdvantages, miniBatches, scoreRows, selectRows, sharedPrefixOf, trajectoryRow, updatePolicy, type UpdateRow } from './policy-update';
import { algorithmSpec, type AlgorithmSpec } from './learner-spec';
import type { Trajectory } from '../rollout/trajectory';

const CONFIG = { ...modelPreset('tiny-test'), vocab_size: 260 };
const PROMPT = [10, 11, 12];

function algorithm(overrides: Partial<AlgorithmSpec> = {}): AlgorithmSpec {
  return algorithmSpec.parse(overrides);
}

/** A trajectory whose old log-probs are the model's own (as the sampler records them). */
function trajectory(
  model: Model,
  o: { group: number; sample: number; response: number[]; lossMask?: number[]; turnEnds?: number[]; turnRewards: number[]; prompt?: number[] },
): Trajectory {
  const prompt = o.prompt ?? PROMPT;
  const lossMask = Uint8Array.from(o.lossMask ?? o.response.map(() => 1));
  const scores = model.scoreTokens(padBatch([[...prompt, ...o.response]]));
  const oldLogProbs = Float32Array.from(o.response, (_, j) => (lossMask[j] ? scores.logProbs[prompt.length + j] : 0));
  const turnEnds = o.turnEnds ?? [o.response.length - 1];
  return {
    taskIndex: o.group,
    group: o.group,
    sample: o.sample,
    promptIds: prompt,
    responseIds: o.response,
    lossMask,
    oldLogProbs,
    turnEnds,
    turnRewards: o.turnRewards,
    reward: o.turnRewards.reduce((a, b) => a + b, 0),
    finish: 'done',
    messages: [],
    info: {},
    generatedTokens: lossMask.reduce((a, b) => a + b, 0),
  };
}

function responseLogProb(model: Model, response: number[]): number {
  const s = model.scoreTokens(padBatch([[...PROMPT, ...response]]));
  let sum = 0;
  for (let j = 0; j < response.length; j++) sum += s.logProbs[PROMPT.length + j];
  return sum;
}

const GOOD = [40, 41, 42];
const BAD = [50, 51, 52];

beforeAll(async () => {
  await ensureEngineBackend();
});

describe('policy update', () => {
  it('a GRPO step raises the log-prob of the response with the positive advantage and lowers the other', () => {
    const model = Model.init(CONFIG, 3);
    const trainer = new Trainer(model, { lr: 1e-2, maxGradNorm: 1, weightDecay: 0 });
    try {
      const rows = [trajectory(model, { group: 0, sample: 0, response: GOOD, turnRewards: [1] }), trajectory(model, { group: 0, sample: 1, response: BAD, turnRewards: [0] })].map(
        trajectoryRow,
      );
      const goodBefore = responseLogProb(model, GOOD);
      const badBefore = responseLogProb(model, BAD);
      computeAdvantages(rows, algorithm());
      expect(rows[0].advantages![PROMPT.length]).toBeGreaterThan(0);
      expect(rows[1].advantages![PROMPT.length]).toBeLessThan(0);
      const result = updatePolicy(trainer, rows, { algorithm: algorithm(), padId: 0, lossScaleFactor: 8 });
      expect(result.optimizerSteps).toBe(1);
      expect(result.trainedTokens).toBe(6);
      expect(result.metrics['actor/ppo_kl']).toBeCloseTo(0, 5); // old log-probs are the model's own
      expect(result.metrics['actor/grad_norm']).toBeGreaterThan(0);
      expect(result.metrics['actor/lr']).toBe(1e-2);
      expect(responseLogProb(model, GOOD)).toBeGreaterThan(goodBefore + 0.01);
      expect(responseLogProb(model, BAD)).toBeLessThan(badBefore - 0.01);
    } finally {
      trainer.dispose();
      model.dispose();
    }
  });

  it('gives environment tokens and the prompt a zero loss coefficient (policy, KL and entropy terms)', () => {
    const model = Model.init(CONFIG, 4);
    // Two turns: 20 21 | env 90 91 | 22 23; the first turn is rewarded 0.5, the second 1.
    const multi = (sample: number, second: number[], rewards: number[]) =>
      trajectory(model, { group: 0, sample, response: [20, 21, 90, 91, ...second], lossMask: [1, 1, 0, 0, 1, 1], turnEnds: [1, 5], turnRewards: rewards });
    const rows = [multi(0, [22, 23], [0.5, 1]), multi(1, [24, 25], [0, 0])].map(trajectoryRow);
    expect(Array.from(rows[0].rewards)).toEqual([0, 0, 0, 0, 0.5, 0, 0, 0, 1]);
    const algo = algorithm({ adv_estimator: 'grpo_per_step', kl_loss_coef: 0.1, entropy_coeff: 0.01 });
    computeAdvantages(rows, algo);
    for (const r of rows) r.refLogProb = r.oldLogProb.map((x) => x - 0.1);
    const seen: LossCoefficients[] = [];
    const spy = {
      accumulate: (batch: ReturnType<typeof padBatch>, c: CoefficientSource) => {
        const s = model.scoreTokens(batch);
        const scores: CurrentScores = { logProbs: s.logProbs, entropy: s.entropy };
        seen.push(typeof c === 'function' ? c(scores) : c);
      },
      step: () => ({ step: 1, lr: 0, gradNorm: 1, clipped: false, skipped: false, microBatches: 1 }),
      zeroGrad: () => undefined,
      microBatchRows: () => Infinity,
    } as unknown as Trainer;
    updatePolicy(spy, rows, { algorithm: algo, padId: 0, lossScaleFactor: 8 });
    expect(seen).toHaveLength(1);
    const T = 9;
    for (let b = 0; b < 2; b++) {
      for (let t = 0; t < T; t++) {
        const policyToken = rows[b].mask[t] === 1;
        const lp = seen[0].logProbCoef[b * T + t];
        const ent = seen[0].entropyCoef![b * T + t];
        if (policyToken) {
          expect(lp).not.toBe(0);
          expect(ent).not.toBe(0);
        } else {
          expect(Math.abs(lp)).toBe(0);
          expect(Math.abs(ent)).toBe(0);
        }
      }
    }
    // Per-turn credit: the first row's first turn gets a different advantage from its second.
    expect(rows[0].advantages![3]).not.toBeCloseTo(rows[0].advantages![7], 6);
    model.dispose();
  });

  it('splits into mini-batches by task and micro-batches without changing the update', () => {
    const run = (miniBatchTasks: number | undefined, microBatchSize: number | undefined) => {
      const model = Model.init(CONFIG, 5);
      const trainer = new Trainer(model, { lr: 1e-2, weightDecay: 0 });
      const rows = [0, 1]
        .flatMap((g) => [
          trajectory(model, { group: g, sample: 0, response: [30 + g, 31, 32], turnRewards: [1] }),
          trajectory(model, { group: g, sample: 1, response: [33, 34 + g], turnRewards: [0] }),
        ])
        .map(trajectoryRow);
      computeAdvantages(rows, algorithm());
      const r = updatePolicy(trainer, rows, { algorithm: algorithm({ loss_agg_mode: 'seq-mean-token-mean' }), padId: 0, lossScaleFactor: 8, miniBatchTasks, microBatchSize });
      const weights = model.exportWeights().get('model.layers.0.self_attn.q_proj.weight')!.data;
      trainer.dispose();
      model.dispose();
      return { steps: r.optimizerSteps, weights };
    };
    const whole = run(undefined, undefined);
    const micro = run(undefined, 1);
    expect(whole.steps).toBe(1);
    expect(micro.steps).toBe(1);
    let diff = 0;
    whole.weights.forEach((w, i) => (diff = Math.max(diff, Math.abs(w - micro.weights[i]))));
    expect(diff).toBeLessThan(1e-6);
    expect(run(1, undefined).steps).toBe(2);
    expect(
      miniBatches(
        [0, 1, 0, 2, 1].map((group) => ({ group }) as UpdateRow),
        2,
      ).map((m) => m.map((r) => r.group)),
    ).toEqual([[0, 0, 1, 1], [2]]);
  });

  it('trains a group that continues one prompt with the prompt run once, to the same update (policy, KL, entropy, critic)', () => {
    const prompts = [Array.from({ length: 12 }, (_, i) => 60 + i), Array.from({ length: 10 }, (_, i) => 80 + i)];
    const run = (sharePrefixes: boolean) => {
      const model = Model.init(CONFIG, 8);
      const critic = model.clone();
      critic.addValueHead(2);
      // eps 1: Adam's first step is then about lr·g for these small gradients, so weights compare as gradients do.
      const trainer = new Trainer(model, { lr: 1, eps: 1, weightDecay: 0 });
      const criticTrainer = new Trainer(critic, { lr: 1, eps: 1, weightDecay: 0 });
      const algo = algorithm({ adv_estimator: 'gae', kl_loss_coef: 0.1, entropy_coeff: 0.01 });
      // Two groups of three; the second's rows are multi-turn (environment tokens in the response).
      const rows = [
        ...[
          [20, 21, 22, 23],
          [24, 25],
          [26, 27, 28],
        ].map((response, i) => trajectory(model, { group: 0, sample: i, response, turnRewards: [i === 1 ? 1 : 0], prompt: prompts[0] })),
        ...[
          [30, 31, 90, 91, 32],
          [33, 34, 92, 93, 35],
          [36, 37, 94, 95, 38],
        ].map((response, i) => trajectory(model, { group: 1, sample: i, response, lossMask: [1, 1, 0, 0, 1], turnEnds: [1, 4], turnRewards: [0.5, i], prompt: prompts[1] })),
      ].map(trajectoryRow);
      for (const r of rows) r.refLogProb = r.oldLogProb.map((x) => x - 0.1);
      const values = scoreRows(critic, rows, { padId: 0, micro: 6, field: 'values' });
      rows.forEach((r, i) => (r.values = values[i]));
      computeAdvantages(rows, algo);
      const result = updatePolicy(trainer, rows, { algorithm: algo, padId: 0, lossScaleFactor: 8, microBatchSize: 2, sharePrefixes }, criticTrainer);
      const weights = [model, critic].flatMap((m) => [...m.exportWeights().values()].map((w) => Float32Array.from(w.data)));
      [trainer, criticTrainer].forEach((t) => t.dispose());
      [model, critic].forEach((m) => m.dispose());
      return { result, weights };
    };
    const wholeRows = run(false);
    const shared = run(true);
    expect(shared.result.trainedTokens).toBe(wholeRows.result.trainedTokens);
    for (const [k, v] of Object.entries(wholeRows.result.metrics)) expect(Math.abs(shared.result.metrics[k] - v)).toBeLessThan(1e-5 * Math.max(1, Math.abs(v)));
    let diff = 0;
    let moved = 0;
    const before = Model.init(CONFIG, 8);
    const initial = [...before.exportWeights().values()].map((w) => w.data);
    before.dispose();
    wholeRows.weights.forEach((w, i) =>
      w.forEach((x, j) => {
        diff = Math.max(diff, Math.abs(x - shared.weights[i][j]));
        if (i < initial.length) moved = Math.max(moved, Math.abs(x - initial[i][j]));
      }),
    );
    expect(moved).toBeGreaterThan(1e-3);
    expect(diff).toBeLessThan(1e-4 * moved);
  });

  it('shares a prefix only where the rows agree and nothing in it is trained', () => {
    const row = (ids: number[], trainedFrom: number) =>
      ({ group: 0, ids, promptLength: trainedFrom, mask: Float32Array.from(ids, (_, i) => (i >= trainedFrom ? 1 : 0)), oldLogProb: new Float32Array(ids.length) }) as UpdateRow;
    const p = Array.from({ length: 12 }, (_, i) => i + 1);
    const s = sharedPrefixOf([row([...p, 50, 51], 12), row([...p, 60], 12), row([...p.slice(0, 10), 70, 71, 72], 10)])!;
    // Ten tokens agree; the last of them starts every row.
    expect(s.prefix).toEqual(p.slice(0, 9));
    expect(s.rows.map((r) => r.ids)).toEqual([
      [10, 11, 12, 50, 51],
      [10, 11, 12, 60],
      [10, 70, 71, 72],
    ]);
    expect(Array.from(s.rows[2].mask)).toEqual([0, 1, 1, 1]);
    expect(sharedPrefixOf([row([...p, 50], 12)])).toBeUndefined();
    expect(sharedPrefixOf([row([...p, 50], 12), row([...p, 50], 3)])).toBeUndefined();
  });

  it('drops groups whose rewards agree with filter_groups and reports the mixed fraction', () => {
    const rows = [
      { group: 0, reward: 1 },
      { group: 0, reward: 0 },
      { group: 1, reward: 1 },
      { group: 1, reward: 1 },
    ] as UpdateRow[];
    expect(selectRows(rows, true)).toEqual({ rows: rows.slice(0, 2), mixedGroups: 0.5 });
    expect(selectRows(rows, false).rows).toHaveLength(4);
  });

  it('leaves no tensor behind across steps (update, reference scoring, critic)', () => {
    const model = Model.init(CONFIG, 6);
    const critic = model.clone();
    critic.addValueHead(1);
    const trainer = new Trainer(model, { lr: 1e-3 });
    const criticTrainer = new Trainer(critic, { lr: 1e-3 });
    const reference = model.clone({ trainable: false });
    const algo = algorithm({ adv_estimator: 'gae', kl_loss_coef: 0.01, entropy_coeff: 0.01, ppo_epochs: 2 });
    const step = () => {
      const rows = [trajectory(model, { group: 0, sample: 0, response: GOOD, turnRewards: [1] }), trajectory(model, { group: 0, sample: 1, response: BAD, turnRewards: [0] })].map(
        trajectoryRow,
      );
      const refs = scoreRows(reference, rows, { padId: 0, micro: 1, field: 'logProbs' });
      const values = scoreRows(critic, rows, { padId: 0, micro: 2, field: 'values' });
      rows.forEach((r, i) => ((r.refLogProb = refs[i]), (r.values = values[i])));
      computeAdvantages(rows, algo);
      return updatePolicy(trainer, rows, { algorithm: algo, padId: 0, lossScaleFactor: 8, microBatchSize: 1 }, criticTrainer);
    };
    const first = step();
    expect(first.metrics['critic/vf_loss']).toBeGreaterThan(0);
    expect(first.metrics['actor/kl_loss']).toBeGreaterThanOrEqual(0);
    expect(first.optimizerSteps).toBe(2);
    const before = tf.memory().numTensors;
    step();
    step();
    expect(tf.memory().numTensors).toBe(before);
    [trainer, criticTrainer].forEach((t) => t.dispose());
    [model, critic, reference].forEach((m) => m.dispose());
  });

  it('stops between micro-batches when the signal aborts', () => {
    const model = Model.init(CONFIG, 7);
    const trainer = new Trainer(model, { lr: 1e-3 });
    const rows = [trajectory(model, { group: 0, sample: 0, response: GOOD, turnRewards: [1] })].map(trajectoryRow);
    computeAdvantages(rows, algorithm());
    const controller = new AbortController();
    controller.abort();
    const r = updatePolicy(trainer, rows, { algorithm: algorithm(), padId: 0, lossScaleFactor: 8, signal: controller.signal });
    expect(r).toMatchObject({ stopped: true, optimizerSteps: 0 });
    expect(trainer.steps).toBe(0);
    trainer.dispose();
    model.dispose();
  });
});
