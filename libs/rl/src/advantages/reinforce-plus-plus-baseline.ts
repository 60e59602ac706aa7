/**
 * `adv_estimator: reinforce_plus_plus_baseline` — REINFORCE++ with a group-mean baseline
 * (verl `compute_reinforce_plus_plus_baseline_outcome_advantage`).
 */
import { maskedWhiten } from '../masked';
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, groupStats, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * REINFORCE++-baseline: subtract the group mean score (0 for a singleton group), broadcast over the row's
 * tokens, then whiten over all unmasked tokens of the batch and multiply by the mask. `returns` equals
 * `advantages`.
 *
 * @example
 * ```ts
 * computeReinforcePlusPlusBaselineOutcomeAdvantage(
 *   { batch: 2, seqLen: 2, tokenLevelRewards: [0, 1, 0, 0], responseMask: [1, 1, 1, 0], index: [0, 0] });
 * ```
 */
export function computeReinforcePlusPlusBaselineOutcomeAdvantage(input: AdvantageInput): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const scores = rowSums(input.tokenLevelRewards, input);
  const centred = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    const { mean } = groupStats(scores, rows);
    for (const r of rows) centred[r] = scores[r] - mean;
  }
  const tiled = broadcastRows(centred, responseMask, batch, seqLen);
  const advantages = maskedWhiten(tiled, responseMask);
  for (let k = 0; k < n; k++) advantages[k] = responseMask[k] === 0 ? 0 : advantages[k] * responseMask[k];
  return { advantages, returns: advantages };
}
