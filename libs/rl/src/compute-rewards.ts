/**
 * Token-level rewards with the KL penalty folded in, per token (verl `compute_rewards`).
 */
import { assertLength, type NumArray } from './shape';

/**
 * verl's `compute_rewards`: `scores - (oldLogProb - refLogProb) · klRatio`, element-wise over any shape
 * and with no mask (the k1 estimator, unclamped). {@link applyKlPenalty} is the masked version with a
 * choice of estimator that verl's trainer uses.
 *
 * @example
 * ```ts
 * computeRewards([0, 1], [-1, -1], [-1.5, -1], 0.1); // [-0.05, 1]
 * ```
 */
export function computeRewards(tokenLevelScores: NumArray, oldLogProb: NumArray, refLogProb: NumArray, klRatio: number): Float64Array {
  assertLength('oldLogProb', oldLogProb, tokenLevelScores.length);
  assertLength('refLogProb', refLogProb, tokenLevelScores.length);
  const out = new Float64Array(tokenLevelScores.length);
  for (let k = 0; k < out.length; k++) out[k] = tokenLevelScores[k] - (oldLogProb[k] - refLogProb[k]) * klRatio;
  return out;
}
