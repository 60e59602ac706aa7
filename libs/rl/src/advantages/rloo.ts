/**
 * `adv_estimator: rloo` — REINFORCE leave-one-out (verl `compute_rloo_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * RLOO (arXiv 2402.14740): in a group of `n > 1` responses the baseline of a response is the mean score
 * of the *other* `n - 1`, i.e. `adv = (score · n - mean · n) / (n - 1)`; a singleton keeps its raw score.
 * Broadcast over the row's response tokens; `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeRlooOutcomeAdvantage({ batch: 3, seqLen: 1, tokenLevelRewards: [1, 0, 0], responseMask: [1, 1, 1], index: [0, 0, 0] });
 * // advantages [1, -0.5, -0.5]
 * ```
 */
export function computeRlooOutcomeAdvantage(input: AdvantageInput): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const scores = rowSums(input.tokenLevelRewards, input);
  const out = Float64Array.from(scores);
  for (const rows of groupRows(index).values()) {
    const k = rows.length;
    if (k < 2) continue;
    let s = 0;
    for (const r of rows) s += scores[r];
    const mean = s / k;
    for (const r of rows) out[r] = (scores[r] * k) / (k - 1) - (mean * k) / (k - 1);
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
