/**
 * `Σ_v π(v)²` of a softmax distribution from its logits (verl `calculate_sum_pi_squared_from_logits`), the
 * per-token input of the optimal-token-baseline estimators.
 */
import { assertLength, type NumArray } from './shape';

/**
 * Row-wise `Σ_v softmax(z)_v²` of `[rows, vocab]` logits, computed as verl does,
 * `exp(logsumexp(2z) − 2·logsumexp(z))`, with the maximum subtracted first so large logits stay finite.
 * Sample at temperature T? Divide the logits by T first (verl scores them at the rollout temperature).
 *
 * @example
 * ```ts
 * sumPiSquaredFromLogits([0, 0, 0, 0], 1, 4); // [0.25]
 * ```
 */
export function sumPiSquaredFromLogits(logits: NumArray, rows: number, vocab: number): Float64Array {
  assertLength('logits', logits, rows * vocab);
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * vocab;
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (logits[o + j] > max) max = logits[o + j];
    let z1 = 0;
    let z2 = 0;
    for (let j = 0; j < vocab; j++) {
      const e = Math.exp(logits[o + j] - max);
      z1 += e;
      z2 += e * e;
    }
    // logsumexp(2z) − 2·logsumexp(z) = log z2 − 2·log z1 once the maximum cancels.
    out[r] = Math.exp(Math.log(z2) - 2 * Math.log(z1));
  }
  return out;
}
