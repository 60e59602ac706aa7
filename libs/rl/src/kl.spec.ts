import type { LossAggMode } from './aggregation';
import { applyKlPenalty, klLoss, klPenalty, klPenaltyGrad, parseKlPenalty, updateKlCoef } from './kl';
import { expectClose, f32, f64, F32, F64, F64_GRAD, finiteDiff, loadGolden, reportWorst } from './testing/golden';

interface KlCase {
  name: string;
  kind?: 'apply_kl_penalty';
  klType: string;
  lossAggMode: LossAggMode;
  batch: number;
  seqLen: number;
  beta?: number;
  inputs: Record<string, number[]>;
  expected: Record<string, any>;
}

const all = loadGolden<KlCase[]>('kl.json');
const lossCases = all.filter((c) => c.kind === undefined);
const penaltyCases = all.filter((c) => c.kind === 'apply_kl_penalty');

afterAll(reportWorst);

describe('kl_penalty / kl loss vs verl reference', () => {
  test.each(lossCases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const input = { batch: c.batch, seqLen: c.seqLen, logProb: f64(c.inputs.logProb), refLogProb: f64(c.inputs.refLogProb), responseMask: c.inputs.responseMask };
    const r = klLoss(input, c.klType, c.lossAggMode);
    expectClose(r.kl, c.expected.kl, F64, `${c.name} kl`, 'kl');
    expectClose(r.loss, c.expected.loss, F64, `${c.name} loss`, 'kl');
    expectClose(r.dLogProb, c.expected.dLogProb, F64_GRAD, `${c.name} dLogProb`, 'kl grad');
    // float32 inputs
    const r32 = klLoss({ ...input, logProb: f32(c.inputs.logProb), refLogProb: f32(c.inputs.refLogProb) }, c.klType, c.lossAggMode);
    expectClose(r32.loss, c.expected.loss, F32, `${c.name} loss f32`, 'kl f32');
    expectClose(r32.dLogProb, c.expected.dLogProb, F32, `${c.name} dLogProb f32`, 'kl f32');
  });

  test.each(penaltyCases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const r = applyKlPenalty(
      { batch: c.batch, seqLen: c.seqLen, tokenLevelScores: c.inputs.tokenLevelScores, oldLogProb: c.inputs.oldLogProb, refLogProb: c.inputs.refLogProb, responseMask: c.inputs.responseMask },
      c.beta!, c.klType);
    expectClose(r.tokenLevelRewards, c.expected.tokenLevelRewards, F64, `${c.name} rewards`, 'kl in reward');
    expectClose(r.currentKl, c.expected.currentKl, F64, `${c.name} current kl`, 'kl in reward');
    expect(r.metrics['actor/reward_kl_penalty_coeff']).toBe(c.beta);
    const next = updateKlCoef({ type: 'adaptive', kl_coef: c.beta!, target_kl: 0.1, horizon: 10000 }, c.beta!, r.currentKl, c.batch);
    expectClose(next, c.expected.adaptiveNext, F64, `${c.name} adaptive`, 'kl in reward');
  });
});

describe('kl estimators', () => {
  const lp = [-0.3, -1.2, -2.5, -0.05, -4];
  const ref = [-0.5, -1.0, -2.5, -1.3, -3.1];

  test.each(['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3'])('analytic derivative of %s matches finite differences', (type) => {
    const g = klPenaltyGrad(lp, ref, type);
    for (let k = 0; k < lp.length; k++) {
      if (type === 'abs' && lp[k] === ref[k]) continue; // kink
      const fd = finiteDiff((x) => klPenalty(x, [ref[k]], type)[0], [lp[k]]);
      expectClose(g[k], fd[0], { rtol: 1e-6, atol: 1e-8 }, `${type}[${k}]`, 'kl own FD');
    }
  });

  test('straight-through "+": forward of the base estimator, gradient of k2', () => {
    expect(Array.from(klPenalty(lp, ref, 'k3+'))).toEqual(Array.from(klPenalty(lp, ref, 'k3')));
    expectClose(klPenaltyGrad(lp, ref, 'low_var_kl+'), lp.map((x, k) => x - ref[k]), F64, 'k3+ grad');
    expect(parseKlPenalty('k2+')).toEqual({ base: 'k2', straightThrough: false });
    expect(parseKlPenalty('abs+')).toEqual({ base: 'abs', straightThrough: true });
  });

  test('k3 is non-negative, clamped at 10, and finite for extreme log-probs', () => {
    const big = klPenalty([-1e4, 0, -50], [0, -1e4, -0.1], 'low_var_kl');
    expect(Array.from(big)).toEqual([10, 10, 10]);
    expect(Array.from(klPenaltyGrad([-1e4, 0], [0, -1e4], 'k3'))).toEqual([0, 0]);
    expect(Math.min(...klPenalty(lp, ref, 'k3'))).toBeGreaterThanOrEqual(0);
  });

  test('unknown types and bad controllers throw', () => {
    expect(() => klPenalty([0], [0], 'full')).toThrow(/Unsupported/);
    expect(() => updateKlCoef({ type: 'adaptive', kl_coef: 0.1, target_kl: 0.1, horizon: 0 }, 0.1, 0.1, 1)).toThrow(/horizon/);
    expect(updateKlCoef({ type: 'fixed', kl_coef: 0.1 }, 0.1, 5, 10)).toBe(0.1);
  });

  test('all-masked batch: zero loss and gradient', () => {
    const r = klLoss({ batch: 1, seqLen: 2, logProb: [-1, -2], refLogProb: [-3, NaN], responseMask: [0, 0] }, 'k3');
    expect(r.loss).toBe(0);
    expect(Array.from(r.dLogProb)).toEqual([0, 0]);
  });
});
