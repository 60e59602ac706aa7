/**
 * `adv_estimator: rloo_vectorized` — vectorised REINFORCE leave-one-out (verl
 * `compute_rloo_vectorized_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * `rloo_vectorized`: for a group of `c ≥ 2` rows, `adv = (c·s − Σ_group s) / (c − 1)` (the score minus the
 * mean of the others, as `rloo`); **a singleton group gets 0**, where `rloo` keeps the raw score.
 * Broadcast over the row's response tokens; `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeRlooVectorizedOutcomeAdvantage({ batch: 3, seqLen: 1, tokenLevelRewards: [1, 0, 5], responseMask: [1, 1, 1], index: [0, 0, 1] });
 * // advantages [1, -1, 0]
 * ```
 */
export function computeRlooVectorizedOutcomeAdvantage(input: AdvantageInput): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const scores = rowSums(input.tokenLevelRewards, input);
  const out = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    const c = rows.length;
    if (c < 2) continue;
    let sum = 0;
    for (const r of rows) sum += scores[r];
    for (const r of rows) out[r] = (c * scores[r] - sum) / (c - 1);
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
