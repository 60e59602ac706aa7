/**
 * `adv_estimator: grpo` — group-relative outcome advantage (verl `compute_grpo_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, groupStats, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * GRPO options (verl names in parentheses).
 *
 * @example
 * ```ts
 * const drGrpo: GrpoOptions = { normAdvByStdInGrpo: false };
 * ```
 */
export interface GrpoOptions {
  /** Added to the group std (`epsilon`). Default 1e-6. */
  epsilon?: number;
  /** Divide by the group std as in GRPO; `false` gives Dr. GRPO (`norm_adv_by_std_in_grpo`). Default true. */
  normAdvByStdInGrpo?: boolean;
}

/**
 * GRPO: each row's score is the sum of its `tokenLevelRewards`; within a group (same `index`) the
 * advantage is `(score - mean) / (std + epsilon)` (unbiased std) or `score - mean` without std
 * normalisation, broadcast over the row's response tokens (`× mask`). A singleton group uses
 * `mean = 0, std = 1` (verl), so its advantage is its raw score / (1 + epsilon); a group whose scores are
 * all equal gets advantage 0. `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeGrpoOutcomeAdvantage({ batch: 2, seqLen: 1, tokenLevelRewards: [1, 0], responseMask: [1, 1], index: ['p', 'p'] });
 * // advantages ≈ [0.7071, -0.7071]
 * ```
 */
export function computeGrpoOutcomeAdvantage(input: AdvantageInput, options: GrpoOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const epsilon = options.epsilon ?? 1e-6;
  const norm = options.normAdvByStdInGrpo ?? true;
  const scores = rowSums(input.tokenLevelRewards, input);
  const out = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    const { mean, std } = groupStats(scores, rows);
    for (const r of rows) out[r] = norm ? (scores[r] - mean) / (std + epsilon) : scores[r] - mean;
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
