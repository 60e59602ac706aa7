/**
 * `adv_estimator: optimal_token_baseline` — a per-token baseline weighted by the cumulative path variance
 * (verl `compute_optimal_token_baseline_advantage`).
 */
import { assertLength, checkShape } from '../shape';
import { groupRows, requireIndex } from './groups';
import { otbReturnsAndWeights, zeroTail } from './optimal-token-baseline-parts';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * Options of the optimal-token-baseline estimators (verl keyword names in parentheses).
 *
 * @example
 * ```ts
 * const opts: OptimalTokenBaselineOptions = { handleZeroTail: true };
 * ```
 */
export interface OptimalTokenBaselineOptions {
  /**
   * Zero the baseline of a group's longest row past the second-longest row's length, when exactly one row
   * is the longest (`handle_zero_tail`). Default false for `optimal_token_baseline`, true for
   * `tir_optimal_token_baseline`.
   */
  handleZeroTail?: boolean;
  /** Added to the baseline's denominator (`epsilon`). Default 1e-8. */
  epsilon?: number;
}

/**
 * Optimal Token Baseline: within each group (same `index`) of at least two rows, one baseline per
 * **position** t, `B_t = Σ_i G_{i,t}·W_{i,t}·m_{i,t} / (Σ_i W_{i,t}·m_{i,t} + ε)` (see
 * `otbReturnsAndWeights` for G and W); a singleton group gets `B = 0`. With `handleZeroTail`, the group's
 * single longest row has `B = 0` from position `second-longest length` on. `advantages = (G − B)·mask`,
 * `returns = G`. Rows are compared position by position, so every row of a group must start its response
 * at the same column (verl's right-padded responses); for responses with holes use
 * `tir_optimal_token_baseline`.
 *
 * Needs `tokenLevelRewards`, `responseMask`, `index`, `oldLogProbs`, `sumPiSquared`; optional
 * `rolloutIsWeights` (then `w` is scaled by `ρ²`).
 *
 * @example
 * ```ts
 * computeOptimalTokenBaselineAdvantage({
 *   batch: 2, seqLen: 2, tokenLevelRewards: [0, 1, 0, 0], responseMask: [1, 1, 1, 1], index: [0, 0],
 *   oldLogProbs: [-1, -1, -1, -1], sumPiSquared: [0.5, 0.5, 0.5, 0.5],
 * });
 * ```
 */
export function computeOptimalTokenBaselineAdvantage(input: AdvantageInput, options: OptimalTokenBaselineOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask: m } = input;
  assertLength('tokenLevelRewards', input.tokenLevelRewards, n);
  assertLength('responseMask', m, n);
  const index = requireIndex(input.index, batch);
  const epsilon = options.epsilon ?? 1e-8;
  const { returns, wCum } = otbReturnsAndWeights(input);
  const baselines = new Float64Array(n);
  for (const rows of groupRows(index).values()) {
    if (rows.length < 2) continue;
    for (let t = 0; t < seqLen; t++) {
      let num = 0;
      let den = 0;
      for (const i of rows) {
        const k = i * seqLen + t;
        if (m[k] === 0) continue;
        num += returns[k] * wCum[k] * m[k];
        den += wCum[k] * m[k];
      }
      const b = num / (den + epsilon);
      for (const i of rows) baselines[i * seqLen + t] = b;
    }
    if (options.handleZeroTail) {
      const lengths = rows.map((i) => {
        let s = 0;
        for (let t = 0; t < seqLen; t++) s += m[i * seqLen + t];
        return s;
      });
      const tail = zeroTail(rows, lengths);
      if (tail) for (let t = tail[1]; t < seqLen; t++) baselines[tail[0] * seqLen + t] = 0;
    }
  }
  const advantages = new Float64Array(n);
  for (let k = 0; k < n; k++) advantages[k] = m[k] === 0 ? 0 : (returns[k] - baselines[k]) * m[k];
  return { advantages, returns };
}
