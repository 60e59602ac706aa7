/**
 * `adv_estimator: gpg` — Group Policy Gradient advantage (verl `compute_gpg_outcome_advantage`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, groupStats, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * GPG options.
 *
 * @example
 * ```ts
 * const opts: GpgOptions = { fNorm: 1 };
 * ```
 */
export interface GpgOptions {
  /** Divisor of the centred score (verl `f_norm`). Default 1. */
  fNorm?: number;
}

/**
 * GPG (arXiv 2504.02546): `adv = α · (score - group_mean) / f_norm` with `α = batch / max(#rows with a
 * non-zero score, 1)` (verl recomputes α this way, ignoring the `alpha` argument); singleton groups use
 * mean 0. Broadcast over the row's response tokens; `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeGpgOutcomeAdvantage({ batch: 2, seqLen: 1, tokenLevelRewards: [1, 0], responseMask: [1, 1], index: [0, 0] });
 * // α = 2 → advantages [1, -1]
 * ```
 */
export function computeGpgOutcomeAdvantage(input: AdvantageInput, options: GpgOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const fNorm = options.fNorm ?? 1;
  const scores = rowSums(input.tokenLevelRewards, input);
  let nonZero = 0;
  for (let i = 0; i < batch; i++) if (scores[i] !== 0) nonZero++;
  const alpha = batch / Math.max(nonZero, 1);
  const out = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    const { mean } = groupStats(scores, rows);
    for (const r of rows) out[r] = (alpha * (scores[r] - mean)) / fNorm;
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
