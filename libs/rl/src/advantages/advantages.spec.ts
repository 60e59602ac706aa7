import { isRlError } from '../errors';
import { expectClose, f32, f64, F32, F64, loadGolden, reportWorst } from '../testing/golden';
import { computeGrpoOutcomeAdvantage } from './grpo';
import { computeGrpoPerStepAdvantage, cumulativeReturns, turnBoundaries } from './grpo-per-step';
import { computeGrpoPasskOutcomeAdvantage } from './grpo-passk';
import { computeGrpoVectorizedOutcomeAdvantage } from './grpo-vectorized';
import { computeOptimalTokenBaselineAdvantage } from './optimal-token-baseline';
import { computeAdvantage, getAdvEstimatorFn, listAdvEstimators, registerAdvEstimator } from './registry';
import { computeRlooOutcomeAdvantage } from './rloo';
import { computeRlooVectorizedOutcomeAdvantage } from './rloo-vectorized';
import { computeOpoOutcomeAdvantage } from './opo';
import { computeGaeAdvantageReturn } from './gae';
import { computeTirOptimalTokenBaselineAdvantage } from './tir-optimal-token-baseline';
import type { AdvantageInput } from './types';

/** Golden cases of OpenTinker's per-step GRPO (not a verl function, so no verl vector covers it). */
interface PerStepCase {
  name: string;
  estimator: 'grpo_per_step';
  batch: number;
  seqLen: number;
  inputs: { tokenLevelRewards: number[]; responseMask: number[]; index: string[]; turnScores?: number[][] };
  config: Record<string, number | boolean>;
  expected: { advantages: number[]; returns: number[] };
}

const cases = loadGolden<PerStepCase[]>('grpo_per_step.json');

function toInput(c: PerStepCase, conv: (x: number[]) => ArrayLike<number>): AdvantageInput {
  const i = c.inputs;
  return {
    batch: c.batch,
    seqLen: c.seqLen,
    tokenLevelRewards: conv(i.tokenLevelRewards),
    responseMask: conv(i.responseMask),
    index: i.index,
    turnScores: i.turnScores?.map((t) => conv(t)),
  };
}

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return isRlError(e) ? e.code : `not an RlError: ${String(e)}`;
  }
  return undefined;
};

afterAll(reportWorst);

describe('grpo_per_step vs the NumPy reference (through the adv_estimator registry)', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s (float64)', (_n, c) => {
    const out = computeAdvantage(toInput(c, f64), { adv_estimator: c.estimator, ...c.config });
    expectClose(out.advantages, c.expected.advantages, F64, `${c.name} advantages`, 'advantages');
    expectClose(out.returns, c.expected.returns, F64, `${c.name} returns`, 'advantages');
  });

  test.each(cases.map((c) => [c.name, c] as const))('%s (float32 inputs)', (_n, c) => {
    const out = computeAdvantage(toInput(c, f32), { adv_estimator: c.estimator, ...c.config });
    expectClose(out.advantages, c.expected.advantages, F32, `${c.name} advantages f32`, 'advantages f32');
  });

  test("every verl estimator is registered under verl's name, plus grpo_per_step", () => {
    const verl = [
      'gae',
      'grpo',
      'reinforce_plus_plus',
      'reinforce_plus_plus_baseline',
      'remax',
      'rloo',
      'opo',
      'grpo_passk',
      'gpg',
      'rloo_vectorized',
      'grpo_vectorized',
      'optimal_token_baseline',
      'tir_optimal_token_baseline',
    ];
    for (const name of [...verl, 'grpo_per_step']) expect(listAdvEstimators()).toContain(name);
  });
});

describe('the vectorised estimators are not aliases', () => {
  const base = (rewards: number[], index: Array<string | number>): AdvantageInput => ({
    batch: rewards.length,
    seqLen: 1,
    tokenLevelRewards: rewards,
    responseMask: rewards.map(() => 1),
    index,
  });

  test('rloo_vectorized gives a singleton 0 where rloo keeps its score', () => {
    const input = base([1, 0, 0.7], ['a', 'a', 'only']);
    expect(Array.from(computeRlooOutcomeAdvantage(input).advantages)).toEqual([1, -1, 0.7]);
    expect(Array.from(computeRlooVectorizedOutcomeAdvantage(input).advantages)).toEqual([1, -1, 0]);
  });

  test('grpo_vectorized floors the group std at sqrt(epsilon); grpo divides by the tiny std', () => {
    const input = base([1, 1 + 1e-5, 1 - 1e-5, 1], ['g', 'g', 'g', 'g']);
    const grpo = computeGrpoOutcomeAdvantage(input).advantages;
    const vec = computeGrpoVectorizedOutcomeAdvantage(input).advantages;
    expect(Math.abs(grpo[1])).toBeGreaterThan(0.5);
    // float32 cannot even tell 1 + 1e-5 from 1 well; the std is floored at 1e-3.
    expect(Math.abs(vec[1])).toBeLessThan(0.02);
  });
});

describe('optimal token baselines', () => {
  const input = (mask: number[], index: Array<string | number>, seqLen: number): AdvantageInput => {
    const batch = index.length;
    const rewards = new Float64Array(batch * seqLen);
    for (let i = 0; i < batch; i++) {
      let last = -1;
      for (let t = 0; t < seqLen; t++) if (mask[i * seqLen + t]) last = t;
      if (last >= 0) rewards[i * seqLen + last] = i % 2;
    }
    return {
      batch,
      seqLen,
      tokenLevelRewards: rewards,
      responseMask: mask,
      index,
      oldLogProbs: mask.map((_, k) => -0.5 - 0.1 * (k % 5)),
      sumPiSquared: mask.map((_, k) => 0.2 + 0.05 * (k % 3)),
    };
  };

  test('without holes, the tir variant equals the plain one', () => {
    const x = input([1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1], [0, 0, 0], 4);
    for (const handleZeroTail of [false, true]) {
      const a = computeOptimalTokenBaselineAdvantage(x, { handleZeroTail });
      const b = computeTirOptimalTokenBaselineAdvantage(x, { handleZeroTail });
      expectClose(b.advantages, a.advantages, F64, `zero tail ${handleZeroTail}`);
    }
  });

  test('a singleton group keeps its returns as advantages', () => {
    const x = input([1, 1, 1], ['solo'], 3);
    const out = computeOptimalTokenBaselineAdvantage(x);
    expect(Array.from(out.advantages)).toEqual(Array.from(out.returns));
  });

  test('the zero tail: the single longest row keeps its raw return past the second-longest length', () => {
    const x = input([1, 1, 1, 1, 1, 1, 0, 0], [0, 0], 4);
    const out = computeOptimalTokenBaselineAdvantage(x, { handleZeroTail: true });
    expect(out.advantages[2]).toBe(out.returns[2]);
    expect(out.advantages[3]).toBe(out.returns[3]);
  });

  test('they need oldLogProbs and sumPiSquared', () => {
    const x = input([1, 1], [0, 0], 1);
    expect(codeOf(() => computeAdvantage({ ...x, sumPiSquared: undefined }, { adv_estimator: 'optimal_token_baseline' }))).toBe('RL_INVALID_INPUT');
    expect(codeOf(() => computeAdvantage({ ...x, oldLogProbs: undefined }, { adv_estimator: 'tir_optimal_token_baseline' }))).toBe('RL_INVALID_INPUT');
  });
});

describe('group statistics edge cases', () => {
  const base = (rewards: number[], index: Array<string | number>, mask?: number[]): AdvantageInput => ({
    batch: rewards.length,
    seqLen: 1,
    tokenLevelRewards: rewards,
    responseMask: mask ?? rewards.map(() => 1),
    index,
  });

  test('singleton group: mean 0, std 1 (raw score / (1 + eps)), as verl', () => {
    const { advantages } = computeGrpoOutcomeAdvantage(base([0.7], ['only']));
    expectClose(advantages, [0.7 / (1 + 1e-6)], F64, 'singleton');
    expectClose(computeRlooOutcomeAdvantage(base([0.7], ['only'])).advantages, [0.7], F64, 'rloo singleton');
    expectClose(computeOpoOutcomeAdvantage(base([0.7], ['only'])).advantages, [0.7], F64, 'opo singleton');
  });

  test('zero-variance group gets exactly zero advantage, not NaN', () => {
    const { advantages } = computeGrpoOutcomeAdvantage(base([1, 1, 1], ['g', 'g', 'g']));
    expect(Array.from(advantages)).toEqual([0, 0, 0]);
    const dr = computeGrpoOutcomeAdvantage(base([1, 1, 1], ['g', 'g', 'g']), { normAdvByStdInGrpo: false });
    expect(Array.from(dr.advantages)).toEqual([0, 0, 0]);
  });

  test('GRPO with and without std normalisation', () => {
    const input = base([1, 0, 0, 1], ['a', 'a', 'a', 'b']);
    const mean = 1 / 3;
    const std = Math.sqrt(((1 - mean) ** 2 + 2 * mean ** 2) / 2);
    expectClose(computeGrpoOutcomeAdvantage(input).advantages, [(1 - mean) / (std + 1e-6), -mean / (std + 1e-6), -mean / (std + 1e-6), 1 / (1 + 1e-6)], F64, 'grpo');
    expectClose(computeGrpoOutcomeAdvantage(input, { normAdvByStdInGrpo: false }).advantages, [1 - mean, -mean, -mean, 1], F64, 'dr grpo');
  });

  test('uids may be numbers or strings; groups need not be contiguous', () => {
    const a = computeGrpoOutcomeAdvantage(base([1, 5, 0, 7], [3, 9, 3, 9])).advantages;
    const b = computeGrpoOutcomeAdvantage(base([1, 0, 5, 7], ['x', 'x', 'y', 'y'])).advantages;
    expectClose([a[0], a[2], a[1], a[3]], Array.from(b), F64, 'order');
  });

  test('all-masked rows produce zero advantages and no NaN', () => {
    const { advantages } = computeGrpoOutcomeAdvantage({ batch: 2, seqLen: 2, tokenLevelRewards: [0, 0, 0, 0], responseMask: [0, 0, 0, 0], index: ['g', 'g'] });
    expect(Array.from(advantages)).toEqual([0, 0, 0, 0]);
    const opo = computeOpoOutcomeAdvantage({ batch: 2, seqLen: 2, tokenLevelRewards: [1, 0, 0, 2], responseMask: [0, 0, 0, 0], index: ['g', 'g'] });
    expect(Array.from(opo.advantages).every(Number.isFinite)).toBe(true);
    const gae = computeGaeAdvantageReturn({ batch: 1, seqLen: 2, tokenLevelRewards: [0, 1], values: [0, 0], responseMask: [0, 0] }, { gamma: 1, lam: 1 });
    expect(Array.from(gae.advantages)).toEqual([0, 0]);
  });

  test('missing inputs and degenerate groups are typed errors', () => {
    expect(codeOf(() => computeGrpoOutcomeAdvantage({ batch: 1, seqLen: 1, tokenLevelRewards: [1], responseMask: [1] }))).toBe('RL_INVALID_INPUT');
    expect(codeOf(() => computeAdvantage({ batch: 1, seqLen: 1, tokenLevelRewards: [1], responseMask: [1] }, { adv_estimator: 'gae' }))).toBe('RL_INVALID_INPUT');
    expect(codeOf(() => computeAdvantage({ batch: 1, seqLen: 1, tokenLevelRewards: [1], responseMask: [1] }, { adv_estimator: 'remax' }))).toBe('RL_INVALID_INPUT');
    expect(codeOf(() => computeGrpoPasskOutcomeAdvantage(base([1], ['a'])))).toBe('RL_DEGENERATE_INPUT');
    expect(codeOf(() => getAdvEstimatorFn('nope'))).toBe('RL_UNKNOWN_NAME');
  });
});

describe('grpo_per_step', () => {
  test('turns are runs of unmasked tokens; returns-to-go are discounted', () => {
    expect(turnBoundaries([1, 1, 0, 1, 0, 0, 1, 1], 2, 4)).toEqual([
      [
        [0, 2],
        [3, 4],
      ],
      [[2, 4]],
    ]);
    expect(cumulativeReturns([0, 0.5, 1], 1)).toEqual([1.5, 1.5, 1]);
    expectClose(cumulativeReturns([1, 0, 2], 0.5), [1.5, 1, 2], F64, 'discounted');
  });

  test('each turn gets the group-normalised return from that turn on', () => {
    const out = computeGrpoPerStepAdvantage({
      batch: 2,
      seqLen: 4,
      tokenLevelRewards: new Float32Array(8),
      responseMask: [1, 0, 1, 0, 1, 1, 0, 0],
      index: ['g', 'g'],
      turnScores: [[0, 1], [0.5]],
    });
    const mean = 0.75;
    const std = Math.SQRT1_2 * 0.5; // unbiased std of [1, 0.5]
    const a0 = (1 - mean) / (std + 1e-6); // turn 0 of row 0: R_0 = 1
    const a1 = (1 - mean) / (std + 1e-6); // turn 1 of row 0: R_1 = 1
    const b0 = (0.5 - mean) / (std + 1e-6);
    expectClose(out.advantages, [a0, 0, a1, 0, b0, b0, 0, 0], F64, 'per-step');
  });

  test('without turn scores it is exactly GRPO', () => {
    const input: AdvantageInput = { batch: 3, seqLen: 2, tokenLevelRewards: [0, 1, 0, 0, 0, 1], responseMask: [1, 1, 1, 0, 1, 1], index: [0, 0, 0] };
    expect(Array.from(computeGrpoPerStepAdvantage(input).advantages)).toEqual(Array.from(computeGrpoOutcomeAdvantage(input).advantages));
    expect(Array.from(computeGrpoPerStepAdvantage({ ...input, turnScores: [[], [], []] }).advantages)).toEqual(Array.from(computeGrpoOutcomeAdvantage(input).advantages));
  });
});

describe('registry', () => {
  test('custom estimators can be registered and selected by adv_estimator', () => {
    const fn = (input: AdvantageInput) => {
      const z = new Float64Array(input.batch * input.seqLen).fill(42);
      return { advantages: z, returns: z };
    };
    registerAdvEstimator('const42', fn);
    registerAdvEstimator('const42', fn); // same function: allowed
    expect(codeOf(() => registerAdvEstimator('const42', (i) => fn(i)))).toBe('RL_ALREADY_REGISTERED');
    registerAdvEstimator('const42', (i) => fn(i), { override: true });
    const out = computeAdvantage({ batch: 1, seqLen: 2, tokenLevelRewards: [0, 0], responseMask: [1, 1] }, { adv_estimator: 'const42' });
    expect(Array.from(out.advantages)).toEqual([42, 42]);
  });

  test('adv_estimator defaults to gae like verl', () => {
    const out = computeAdvantage({ batch: 1, seqLen: 3, tokenLevelRewards: [0, 0, 1], values: [0, 0, 0], responseMask: [1, 1, 1] });
    expect(out.returns[0]).toBeCloseTo(1);
  });
});

describe('empty batches', () => {
  test.each(listAdvEstimators().filter((n) => n !== 'const42' && n !== 'grpo_passk'))('%s handles batch 0 and seqLen 0', (name) => {
    for (const [batch, seqLen] of [
      [0, 5],
      [0, 0],
    ]) {
      const n = batch * seqLen;
      const out = computeAdvantage(
        {
          batch,
          seqLen,
          tokenLevelRewards: new Float32Array(n),
          responseMask: new Float32Array(n),
          index: [],
          values: new Float32Array(n),
          rewardBaselines: [],
          turnScores: [],
          oldLogProbs: new Float32Array(n),
          sumPiSquared: new Float32Array(n),
        },
        { adv_estimator: name },
      );
      expect(out.advantages.length).toBe(0);
    }
    const rows = computeAdvantage(
      {
        batch: 2,
        seqLen: 0,
        tokenLevelRewards: [],
        responseMask: [],
        index: ['a', 'a'],
        values: [],
        rewardBaselines: [0, 0],
        turnScores: [[1], [0]],
        oldLogProbs: [],
        sumPiSquared: [],
      },
      { adv_estimator: name },
    );
    expect(rows.advantages.length).toBe(0);
  });
});
