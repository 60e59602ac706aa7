/**
 * `adv_estimator: grpo_passk` — Pass@k advantage (verl `compute_grpo_passk_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, groupStats, requireIndex } from './groups';
import type { GrpoOptions } from './grpo';
import type { AdvantageInput, AdvantageOutput } from './types';
import { RlError } from '../errors';

/**
 * Pass@k (arXiv 2503.19595): only the best response of each group gets a non-zero advantage,
 * `r_max - r_second_max` (divided by `std + epsilon` when `normAdvByStdInGrpo`). Groups need at least two
 * responses. Ties for the best score go to the first row (torch.topk leaves it unspecified).
 *
 * @example
 * ```ts
 * computeGrpoPasskOutcomeAdvantage(
 *   { batch: 3, seqLen: 1, tokenLevelRewards: [1, 0, 0.5], responseMask: [1, 1, 1], index: [0, 0, 0] },
 *   { normAdvByStdInGrpo: false });
 * // advantages [0.5, 0, 0]
 * ```
 */
export function computeGrpoPasskOutcomeAdvantage(input: AdvantageInput, options: GrpoOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const epsilon = options.epsilon ?? 1e-6;
  const norm = options.normAdvByStdInGrpo ?? true;
  const scores = rowSums(input.tokenLevelRewards, input);
  const out = new Float64Array(batch);
  for (const [id, rows] of groupRows(index)) {
    if (rows.length < 2) {
      throw new RlError('RL_DEGENERATE_INPUT', `Pass@k requires at least 2 samples per group. Got ${rows.length} for group ${String(id)}.`, 'index');
    }
    const sorted = [...rows].sort((a, b) => scores[b] - scores[a] || a - b);
    let adv = scores[sorted[0]] - scores[sorted[1]];
    if (norm) adv /= groupStats(scores, rows).std + epsilon;
    out[sorted[0]] = adv;
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
