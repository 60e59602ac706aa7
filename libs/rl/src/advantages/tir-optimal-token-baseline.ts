/**
 * `adv_estimator: tir_optimal_token_baseline` — the optimal token baseline aligned on valid tokens, for
 * multi-turn responses with holes (verl `compute_multi_turn_optimal_token_baseline_advantage`).
 */
import { assertLength, checkShape } from '../shape';
import { groupRows, requireIndex } from './groups';
import type { OptimalTokenBaselineOptions } from './optimal-token-baseline';
import { otbReturnsAndWeights, zeroTail } from './optimal-token-baseline-parts';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * The optimal token baseline (see {@link computeOptimalTokenBaselineAdvantage}) computed on each row's
 * valid tokens packed to the left: the baseline for the k-th valid token of a row is
 * `Σ_i G·W / (Σ_i W + ε)` over the k-th valid tokens of the group's rows (rows shorter than k contribute
 * nothing), and the results are scattered back to the tokens' positions. Rows without a valid token are
 * left out of the groups; a group of one gets baseline 0. `handleZeroTail` (default **true** here) works
 * on the packed positions. `advantages = (G − B)·mask`, `returns = G` (unpacked).
 *
 * Needs `tokenLevelRewards`, `responseMask`, `index`, `oldLogProbs`, `sumPiSquared`; optional
 * `rolloutIsWeights`.
 *
 * @example
 * ```ts
 * computeTirOptimalTokenBaselineAdvantage({
 *   batch: 2, seqLen: 3, tokenLevelRewards: [0, 0, 1, 0, 0, 0], responseMask: [1, 0, 1, 1, 1, 0], index: [0, 0],
 *   oldLogProbs: [-1, 0, -1, -1, -1, 0], sumPiSquared: [0.5, 0, 0.5, 0.5, 0.5, 0],
 * });
 * ```
 */
export function computeTirOptimalTokenBaselineAdvantage(input: AdvantageInput, options: OptimalTokenBaselineOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask: m } = input;
  assertLength('tokenLevelRewards', input.tokenLevelRewards, n);
  assertLength('responseMask', m, n);
  const index = requireIndex(input.index, batch);
  const epsilon = options.epsilon ?? 1e-8;
  const handleZeroTail = options.handleZeroTail ?? true;
  const { returns, wCum } = otbReturnsAndWeights(input);

  // Positions of each row's valid tokens (verl: response_mask[i].bool()).
  const positions: number[][] = [];
  for (let i = 0; i < batch; i++) {
    const p: number[] = [];
    for (let t = 0; t < seqLen; t++) if (m[i * seqLen + t] !== 0) p.push(t);
    positions.push(p);
  }
  const baselines: Float64Array[] = positions.map((p) => new Float64Array(p.length));
  const nonEmpty = Array.from({ length: batch }, (_, i) => i).filter((i) => positions[i].length > 0);
  const groups = groupRows(nonEmpty.map((i) => index[i]));
  for (const members of groups.values()) {
    const rows = members.map((j) => nonEmpty[j]);
    if (rows.length < 2) continue;
    const width = Math.max(...rows.map((i) => positions[i].length));
    for (let k = 0; k < width; k++) {
      let num = 0;
      let den = 0;
      for (const i of rows) {
        if (k >= positions[i].length) continue;
        const idx = i * seqLen + positions[i][k];
        num += returns[idx] * wCum[idx];
        den += wCum[idx];
      }
      const b = num / (den + epsilon);
      for (const i of rows) if (k < positions[i].length) baselines[i][k] = b;
    }
    if (handleZeroTail) {
      const tail = zeroTail(
        rows,
        rows.map((i) => positions[i].length),
      );
      if (tail) baselines[tail[0]].fill(0, tail[1]);
    }
  }
  const advantages = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    positions[i].forEach((t, k) => {
      const idx = i * seqLen + t;
      advantages[idx] = (returns[idx] - baselines[i][k]) * m[idx];
    });
  }
  return { advantages, returns };
}
