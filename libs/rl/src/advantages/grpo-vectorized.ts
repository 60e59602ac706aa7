/**
 * `adv_estimator: grpo_vectorized` — GRPO with group statistics in float32 (verl
 * `compute_grpo_vectorized_outcome_advantage`, which uses `verl.utils.groupwise.group_mean_std`).
 */
import { assertLength, checkShape, rowSums } from '../shape';
import { broadcastRows, groupRows, requireIndex } from './groups';
import type { GrpoOptions } from './grpo';
import type { AdvantageInput, AdvantageOutput } from './types';

const f32 = Math.fround;

/**
 * verl's `group_mean_std` for one group, emulated in float32 with `Math.fround` after every operation
 * (torch runs it on float32 tensors, summing with `index_add_` in row order): the one-pass variance
 * `(Σx² − (Σx)²/n)/(n−1)` is floored at `eps` before the square root, so `std ≥ sqrt(eps)`. A singleton
 * group gets mean 0 and std 1.
 *
 * @example
 * ```ts
 * groupMeanStdF32([1, 1, 1], [0, 1, 2], 1e-6); // { mean: 1, std: ≈0.001 }
 * ```
 */
export function groupMeanStdF32(scores: ArrayLike<number>, rows: readonly number[], eps: number): { mean: number; std: number } {
  const count = rows.length;
  if (count <= 1) return { mean: 0, std: 1 };
  let s1 = 0;
  let s2 = 0;
  for (const r of rows) {
    const x = f32(scores[r]);
    s1 = f32(s1 + x);
    s2 = f32(s2 + f32(x * x));
  }
  const mean = f32(s1 / count);
  const varNum = f32(s2 - f32(f32(s1 * s1) / count));
  const variance = f32(varNum / (count - 1));
  const std = f32(Math.sqrt(Math.max(variance, f32(eps))));
  return { mean, std };
}

/**
 * `grpo_vectorized`: the GRPO formula `(s − μ_g)/(σ_g + ε)` (or `s − μ_g` without std normalisation), but
 * with μ and σ from {@link groupMeanStdF32}: float32, one-pass variance, σ floored at `sqrt(ε)`. It
 * differs from `grpo` by about 1e-4 for close scores, and a lot when a group's std is below `sqrt(ε)`
 * (`grpo` then divides by the tiny std). Scores and the final division stay in float64, as in verl (the
 * float64 scores minus the float32 mean promote to float64). Singleton groups use μ = 0, σ = 1.
 * `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeGrpoVectorizedOutcomeAdvantage({ batch: 2, seqLen: 1, tokenLevelRewards: [1, 0], responseMask: [1, 1], index: [0, 0] });
 * // advantages ≈ [0.7071, -0.7071]
 * ```
 */
export function computeGrpoVectorizedOutcomeAdvantage(input: AdvantageInput, options: GrpoOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, responseMask } = input;
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const epsilon = options.epsilon ?? 1e-6;
  const norm = options.normAdvByStdInGrpo ?? true;
  const scores = rowSums(input.tokenLevelRewards, input);
  const out = new Float64Array(batch);
  for (const rows of groupRows(index).values()) {
    const { mean, std } = groupMeanStdF32(scores, rows, epsilon);
    // std_g + epsilon is a float32 tensor plus a Python float: computed in float32.
    const denom = f32(std + f32(epsilon));
    for (const r of rows) out[r] = norm ? (scores[r] - mean) / denom : scores[r] - mean;
  }
  const advantages = broadcastRows(out, responseMask, batch, seqLen);
  return { advantages, returns: advantages };
}
