import { isRlError } from '../errors';
import { expectClose, F64, finiteDiff } from '../testing/golden';
import { computePolicyLossClipCov } from './clip-cov';
import { computePolicyLossVanilla } from './policy-loss';
import { computePolicyLoss, getPolicyLossFn, listPolicyLosses, registerPolicyLoss } from './registry';
import { computePolicyLossSapo } from './sapo';
import type { ActorConfig, PolicyLossInput } from './types';

const ALL_MODES = ['vanilla', 'gspo', 'sapo', 'cispo', 'gpg', 'clip_cov', 'kl_cov', 'geo_mean', 'reinforce'];

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return isRlError(e) ? e.code : `not an RlError: ${String(e)}`;
  }
  return undefined;
};

describe('registry', () => {
  test("verl's loss modes are registered under verl's names, plus reinforce", () => {
    for (const m of ALL_MODES) expect(listPolicyLosses()).toContain(m);
  });
});

describe('sapo semantics', () => {
  const one = (lp: number, a: number, config: ActorConfig = {}) =>
    computePolicyLossSapo({ batch: 1, seqLen: 1, oldLogProb: [0], logProb: [lp], advantages: [a], responseMask: [1] }, 'token-mean', config);

  test('on-policy the gate is 2/τ with slope 1: the PPO surrogate gradient', () => {
    const r = one(0, 1.5);
    expectClose(r.loss, -1.5 * 2, F64, 'loss at ratio 1 (tau_pos = 1)');
    expectClose(r.dLogProb[0], -1.5, F64, 'gradient at ratio 1');
    const neg = one(0, -1, { tau_neg: 2 });
    expectClose(neg.loss, 1, F64, 'loss at ratio 1 (tau_neg = 2)');
  });

  test('dLogProb matches finite differences (no stop-gradient in sapo)', () => {
    const input: PolicyLossInput = {
      batch: 2,
      seqLen: 3,
      oldLogProb: [-1, -2, -0.5, -1, -1, -3],
      logProb: [-0.7, -2.4, -0.5, -1.3, -0.2, -3],
      advantages: [1, 1, 1, -0.5, -0.5, 0],
      responseMask: [1, 1, 0, 1, 1, 1],
    };
    const out = computePolicyLossSapo(input);
    const fd = finiteDiff((lp) => computePolicyLossSapo({ ...input, logProb: lp }).loss, input.logProb);
    expectClose(out.dLogProb, fd, { rtol: 1e-6, atol: 1e-9 }, 'sapo FD');
  });
});

describe('vanilla PPO semantics', () => {
  const one = (lp: number, old: number, a: number, config: ActorConfig = {}) =>
    computePolicyLossVanilla({ batch: 1, seqLen: 1, oldLogProb: [old], logProb: [lp], advantages: [a], responseMask: [1] }, 'token-mean', config);

  test('asymmetric clip: ratio 1.25 with A > 0 is clipped at 1.2 but not at 1.28', () => {
    const lp = Math.log(1.25);
    const clipped = one(lp, 0, 1, { clip_ratio_low: 0.2, clip_ratio_high: 0.2 });
    expectClose(clipped.loss, -1.2, F64, 'loss');
    expect(clipped.dLogProb[0]).toBe(0);
    expect(clipped.metrics['actor/pg_clipfrac']).toBeCloseTo(1);
    const free = one(lp, 0, 1, { clip_ratio_low: 0.2, clip_ratio_high: 0.28 });
    expectClose(free.loss, -1.25, F64, 'loss');
    expectClose(free.dLogProb[0], -1.25, F64, 'grad');
  });

  test('dual clip bounds the loss of negative advantages at -A·c with zero gradient', () => {
    const r = one(Math.log(10), 0, -2, { clip_ratio_c: 3 });
    expectClose(r.loss, 6, F64, 'loss');
    expect(r.dLogProb[0]).toBe(0);
    expect(r.metrics['actor/pg_clipfrac_lower']).toBeCloseTo(1);
    const below = one(Math.log(2), 0, -2, { clip_ratio_c: 3 });
    expectClose(below.loss, 4, F64, 'loss');
    expectClose(below.dLogProb[0], 4, F64, 'grad');
    expect(codeOf(() => one(0, 0, 1, { clip_ratio_c: 1 }))).toBe('RL_INVALID_CONFIG');
  });

  test('very negative log-probs stay finite (log-ratio clamped at ±20 like verl)', () => {
    for (const [lp, old] of [
      [-1e4, -5],
      [-5, -1e4],
      [-1e30, -1e30],
    ]) {
      const r = one(lp, old, 1.5);
      expect(Number.isFinite(r.loss)).toBe(true);
      expect(Number.isFinite(r.dLogProb[0])).toBe(true);
      expect(Number.isFinite(r.metrics['actor/ppo_kl'])).toBe(true);
    }
  });
});

describe('masks', () => {
  const input = (mask: number[]): PolicyLossInput => ({
    batch: 2,
    seqLen: 3,
    oldLogProb: [-1, -1, NaN, -2, NaN, NaN],
    logProb: [-0.9, -1.3, NaN, -1.5, NaN, -Infinity],
    advantages: [1, 1, NaN, -1, NaN, NaN],
    responseMask: mask,
  });

  test.each(listPolicyLosses().filter((m) => m !== 'const'))('%s: NaN under the mask does not leak', (mode) => {
    const out = computePolicyLoss(input([1, 1, 0, 1, 0, 0]), { clip_ratio: 0.2, policy_loss: { loss_mode: mode, clip_cov_ratio: 0.5, kl_cov_ratio: 0.5 } });
    expect(Number.isFinite(out.loss)).toBe(true);
    for (const k of [2, 4, 5]) expect(out.dLogProb[k]).toBe(0);
    for (const v of Object.values(out.metrics)) expect(Number.isFinite(v)).toBe(true);
  });

  test.each(ALL_MODES)('%s: all-masked batch gives loss 0 and zero gradient', (mode) => {
    const masked = { ...input([0, 0, 0, 0, 0, 0]), oldLogProb: [-1, -1, -1, -1, -1, -1], logProb: [-2, -2, -2, -2, -2, -2], advantages: [1, 1, 1, 1, 1, 1] };
    const out = computePolicyLoss(masked, { policy_loss: { loss_mode: mode } });
    expect(out.loss).toBe(0);
    expect(Array.from(out.dLogProb).every((x) => x === 0)).toBe(true);
  });
});

describe('clip_cov random subset', () => {
  test('cuts exactly max(floor(ratio·tokens), 1) candidates, reproducibly with a seeded random', () => {
    const n = 64;
    const lp = Array.from({ length: n }, (_, k) => -1 - (k % 8) * 0.2);
    const adv = Array.from({ length: n }, (_, k) => (k % 8) * -0.5);
    const input: PolicyLossInput = { batch: 1, seqLen: n, oldLogProb: lp, logProb: lp, advantages: adv, responseMask: new Array(n).fill(1) };
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const cfg: ActorConfig = { policy_loss: { clip_cov_ratio: 0.05, clip_cov_lb: 0.1, clip_cov_ub: 10 } };
    const a = computePolicyLossClipCov({ ...input, random }, 'token-mean', cfg);
    expect(a.metrics['actor/pg_clipfrac']).toBeCloseTo(3 / 64);
    seed = 7;
    const b = computePolicyLossClipCov({ ...input, random }, 'token-mean', cfg);
    expect(Array.from(b.dLogProb)).toEqual(Array.from(a.dLogProb));
  });
});

describe('registry', () => {
  test('custom loss modes and errors', () => {
    registerPolicyLoss('const', (input) => ({
      loss: 1,
      dLogProb: new Float64Array(input.batch * input.seqLen),
      metrics: {},
    }));
    const out = computePolicyLoss({ batch: 1, seqLen: 1, oldLogProb: [0], logProb: [0], advantages: [0], responseMask: [1] }, { policy_loss: { loss_mode: 'const' } });
    expect(out.loss).toBe(1);
    expect(codeOf(() => getPolicyLossFn('nope'))).toBe('RL_UNKNOWN_NAME');
  });
});

describe('empty batches', () => {
  test.each(ALL_MODES)('%s: batch 0 gives loss 0', (mode) => {
    const out = computePolicyLoss({ batch: 0, seqLen: 4, oldLogProb: [], logProb: [], advantages: [], responseMask: [] }, { policy_loss: { loss_mode: mode } });
    expect(out.loss).toBe(0);
    expect(out.dLogProb.length).toBe(0);
    for (const v of Object.values(out.metrics)) expect(v).toBe(0);
  });
});
