/**
 * `adv_estimator: optimal_token_baseline` — a per-token baseline weighted by the cumulative path variance
 * (verl `compute_optimal_token_baseline_advantage`).
 */
import { RlError } from '../errors';
import { assertLength, checkShape, type NumArray } from '../shape';
import { groupRows, requireIndex } from './groups';
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

/** The inputs both optimal-token-baseline estimators read, checked. @internal */
export function otbInputs(input: AdvantageInput): { oldLogProbs: NumArray; sumPiSquared: NumArray; isw?: NumArray } {
  const n = input.batch * input.seqLen;
  if (input.oldLogProbs == null) throw new RlError('RL_INVALID_INPUT', 'optimal_token_baseline needs oldLogProbs', 'oldLogProbs');
  if (input.sumPiSquared == null) throw new RlError('RL_INVALID_INPUT', 'optimal_token_baseline needs sumPiSquared', 'sumPiSquared');
  assertLength('oldLogProbs', input.oldLogProbs, n);
  assertLength('sumPiSquared', input.sumPiSquared, n);
  if (input.rolloutIsWeights != null) assertLength('rolloutIsWeights', input.rolloutIsWeights, n);
  return { oldLogProbs: input.oldLogProbs, sumPiSquared: input.sumPiSquared, ...(input.rolloutIsWeights != null ? { isw: input.rolloutIsWeights } : {}) };
}

/**
 * The per-row sequences both estimators start from: returns-to-go `G_t = Σ_{t' ≥ t} r·m` and the
 * cumulative path variance `W_t = Σ_{t' ≤ t} w·m` with `w = (1 − 2·exp(oldLogProb) + Σπ²)·ρ²`. Masked
 * tokens contribute nothing (and are never read, so NaN there does not spread). @internal
 */
export function otbReturnsAndWeights(input: AdvantageInput): { returns: Float64Array; wCum: Float64Array } {
  const { batch, seqLen, tokenLevelRewards: r, responseMask: m } = input;
  const { oldLogProbs, sumPiSquared, isw } = otbInputs(input);
  const n = batch * seqLen;
  const returns = new Float64Array(n);
  const wCum = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    const o = i * seqLen;
    let acc = 0;
    for (let t = seqLen - 1; t >= 0; t--) {
      const mk = m[o + t];
      if (mk !== 0) acc += r[o + t] * mk;
      returns[o + t] = acc;
    }
    let w = 0;
    for (let t = 0; t < seqLen; t++) {
      const k = o + t;
      const mk = m[k];
      if (mk !== 0) {
        let step = 1 - 2 * Math.exp(oldLogProbs[k]) + sumPiSquared[k];
        if (isw) step *= isw[k] * isw[k];
        w += step * mk;
      }
      wCum[k] = w;
    }
  }
  return { returns, wCum };
}

/**
 * The row of a group whose baseline tail is zeroed, and from which position: when exactly one row has the
 * largest length and it is strictly longer than the second-longest, `[that row, second length]`; else
 * null. `rows` lists the group's members, `lengths[j]` the length of `rows[j]`. @internal
 */
export function zeroTail(rows: readonly number[], lengths: readonly number[]): [number, number] | null {
  const sorted = [...lengths].sort((a, b) => a - b);
  const max = Math.trunc(sorted[sorted.length - 1]);
  const second = Math.trunc(sorted[sorted.length - 2]);
  const longest = lengths.flatMap((l, j) => (l === max ? [j] : []));
  return longest.length === 1 && max > second ? [rows[longest[0]], second] : null;
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
