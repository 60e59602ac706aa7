import { isRlError } from './errors';
import { klLoss, klPenalty, klPenaltyGrad, parseKlPenalty, updateKlCoef } from './kl';
import { getKlController } from './kl-controller';
import { expectClose, F64, finiteDiff } from './testing/golden';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return isRlError(e) ? e.code : `not an RlError: ${String(e)}`;
  }
  return undefined;
};

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

  test("verl's '+' names raise RL_NOT_IMPLEMENTED, as verl raises NotImplementedError", () => {
    for (const name of ['k1+', 'kl+', 'abs+', 'k2+', 'mse+', 'k3+', 'low_var_kl+', 'full']) {
      expect(codeOf(() => klPenalty(lp, ref, name))).toBe('RL_NOT_IMPLEMENTED');
      expect(codeOf(() => klLoss({ batch: 1, seqLen: 5, logProb: lp, refLogProb: ref, responseMask: [1, 1, 1, 1, 1] }, name))).toBe('RL_NOT_IMPLEMENTED');
    }
    expect(codeOf(() => klPenalty(lp, ref, 'k4'))).toBe('RL_UNKNOWN_NAME');
  });

  test('OpenTinker straight-through _st: forward of the base estimator, gradient of k2', () => {
    for (const [st, base] of [
      ['k1_st', 'k1'],
      ['kl_st', 'kl'],
      ['abs_st', 'abs'],
      ['k3_st', 'k3'],
      ['low_var_kl_st', 'low_var_kl'],
    ]) {
      expect(Array.from(klPenalty(lp, ref, st))).toEqual(Array.from(klPenalty(lp, ref, base)));
      expectClose(
        klPenaltyGrad(lp, ref, st),
        lp.map((x, k) => x - ref[k]),
        F64,
        `${st} grad`,
      );
      expect(parseKlPenalty(st)).toEqual({ base, straightThrough: true });
    }
    expect(parseKlPenalty('k2')).toEqual({ base: 'k2', straightThrough: false });
  });

  test('k3 is non-negative, clamped at 10, and finite for extreme log-probs', () => {
    const big = klPenalty([-1e4, 0, -50], [0, -1e4, -0.1], 'low_var_kl');
    expect(Array.from(big)).toEqual([10, 10, 10]);
    expect(Array.from(klPenaltyGrad([-1e4, 0], [0, -1e4], 'k3'))).toEqual([0, 0]);
    expect(Math.min(...klPenalty(lp, ref, 'k3'))).toBeGreaterThanOrEqual(0);
  });

  test('KL controllers: fixed does nothing, adaptive moves by at most ±20% of n_steps/horizon, bad configs throw', () => {
    expect(codeOf(() => updateKlCoef({ type: 'adaptive', kl_coef: 0.1, target_kl: 0.1, horizon: 0 }, 0.1, 0.1, 1))).toBe('RL_INVALID_CONFIG');
    expect(codeOf(() => getKlController({ type: 'adaptive', kl_coef: 0.1, target_kl: 0.1, horizon: 0 }))).toBe('RL_INVALID_CONFIG');
    expect(codeOf(() => getKlController({ type: 'other' as 'fixed', kl_coef: 0.1 }))).toBe('RL_UNKNOWN_NAME');
    expect(updateKlCoef({ type: 'fixed', kl_coef: 0.1 }, 0.1, 5, 10)).toBe(0.1);
    const fixed = getKlController({ type: 'fixed', kl_coef: 0.1 });
    fixed.update(5, 10);
    expect(fixed.value).toBe(0.1);
    const adaptive = getKlController({ type: 'adaptive', kl_coef: 0.1, target_kl: 0.1, horizon: 100 });
    adaptive.update(1, 10); // error clipped at +0.2
    expectClose(adaptive.value, 0.1 * (1 + 0.2 * 0.1), F64, 'adaptive');
  });

  test('all-masked batch: zero loss and gradient', () => {
    const r = klLoss({ batch: 1, seqLen: 2, logProb: [-1, -2], refLogProb: [-3, NaN], responseMask: [0, 0] }, 'k3');
    expect(r.loss).toBe(0);
    expect(Array.from(r.dLogProb)).toEqual([0, 0]);
  });
});
