/**
 * `adv_estimator: opo` — On-Policy RL with Optimal reward baseline (verl `compute_opo_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * OPO (arXiv 2505.23585): the baseline of a group is the length-weighted mean score
 * `Σ len_j · score_j / Σ len_j` (len = number of unmasked tokens); `adv = score - baseline`, broadcast
 * over the row's response tokens. Singleton groups use baseline 0. Guard: when every response of a group
 * is empty (verl: 0/0 = NaN) the baseline is 0.
 *
 * @example
 * ```ts
 * computeOpoOutcomeAdvantage({ batch: 2, seqLen: 2, tokenLevelRewards: [0, 1, 0, 0], responseMask: [1, 1, 1, 0], index: [0, 0] });
 * // baseline (2·1 + 1·0) / 3 → advantages [1/3, 1/3, -2/3, 0]
 * ```
 */
export function computeOpoOutcomeAdvantage(input: AdvantageInput): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const scores = rowSums(input.tokenLevelRewards, input);
  const lengths = rowSums(responseMask, input);
  const out = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    let baseline = 0;
    if (rows.length > 1) {
      let num = 0;
      let den = 0;
      for (const r of rows) {
        num += lengths[r] * scores[r];
        den += lengths[r];
      }
      baseline = den === 0 ? 0 : num / den;
    }
    for (const r of rows) out[r] = scores[r] - baseline;
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
