/**
 * `adv_estimator: grpo_per_step` — GRPO with per-turn credit assignment for multi-turn episodes
 * (OpenTinker `compute_grpo_per_step_advantage`, inspired by GTPO, arXiv 2511.17052).
 */
import { assertLength, checkShape, type NumArray } from '../shape';
import { computeGrpoOutcomeAdvantage, type GrpoOptions } from './grpo';
import { groupRows, groupStats, requireIndex } from './groups';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * Options of {@link computeGrpoPerStepAdvantage}.
 *
 * @example
 * ```ts
 * const opts: GrpoPerStepOptions = { gamma: 0.9, normAdvByStdInGrpo: true };
 * ```
 */
export interface GrpoPerStepOptions extends GrpoOptions {
  /** Discount between turns for the per-turn returns. Default 1 (OpenTinker's default). */
  gamma?: number;
}

/**
 * Turns of each row: maximal runs of consecutive unmasked tokens, as `[start, end)` pairs. In a
 * multi-turn response the environment's observation tokens are masked, so each run is one LLM turn.
 *
 * @example
 * ```ts
 * turnBoundaries([1, 1, 0, 1, 0, 0], 1, 6); // [[[0, 2], [3, 4]]]
 * ```
 */
export function turnBoundaries(responseMask: NumArray, batch: number, seqLen: number): Array<Array<[number, number]>> {
  assertLength('responseMask', responseMask, batch * seqLen);
  const all: Array<Array<[number, number]>> = [];
  for (let i = 0; i < batch; i++) {
    const row: Array<[number, number]> = [];
    let start = -1;
    for (let t = 0; t < seqLen; t++) {
      const on = responseMask[i * seqLen + t] === 1;
      if (on && start < 0) start = t;
      else if (!on && start >= 0 && responseMask[i * seqLen + t] === 0) {
        row.push([start, t]);
        start = -1;
      }
    }
    if (start >= 0) row.push([start, seqLen]);
    all.push(row);
  }
  return all;
}

/**
 * Discounted return-to-go of a list of per-turn rewards: `R_t = r_t + γ · R_{t+1}`.
 *
 * @example
 * ```ts
 * cumulativeReturns([0, 0.5, 1], 1); // [1.5, 1.5, 1]
 * ```
 */
export function cumulativeReturns(turnScores: ArrayLike<number>, gamma = 1): number[] {
  const out = new Array<number>(turnScores.length).fill(0);
  let acc = 0;
  for (let t = turnScores.length - 1; t >= 0; t--) {
    acc = turnScores[t] + gamma * acc;
    out[t] = acc;
  }
  return out;
}

/**
 * Per-turn GRPO, exactly OpenTinker's definition:
 *
 * 1. Turns of row `i` are the maximal runs of unmasked tokens (see {@link turnBoundaries}).
 * 2. From `turnScores[i] = [r_0, …, r_{K-1}]` (the reward after each turn) the returns-to-go are
 *    `R_k = r_k + γ · R_{k+1}`. A row with no (or an empty) list uses a single return, the sum of its
 *    masked `tokenLevelRewards`.
 * 3. Group statistics use each row's *total* return `R_0`: `μ_g`, `σ_g` = mean and unbiased std of `R_0`
 *    over the rows of the group (singleton group: `μ = 0, σ = 1`, as GRPO).
 * 4. Every token of turn `k` gets `(R_k - μ_g) / (σ_g + ε)` (or `R_k - μ_g` without std normalisation),
 *    i.e. the group-normalised return from that turn on. If a row has more turns than returns, the extra
 *    turns reuse the last return; extra returns are ignored. Masked tokens get 0.
 *
 * When no row has turn scores (`turnScores` missing, wrong length, or all lists empty) the result is
 * exactly {@link computeGrpoOutcomeAdvantage} (single-turn equivalence). `returns` equals `advantages`.
 *
 * @example
 * ```ts
 * computeGrpoPerStepAdvantage({
 *   batch: 2, seqLen: 4, tokenLevelRewards: new Float32Array(8),
 *   responseMask: [1, 0, 1, 0, 1, 1, 0, 0], index: ['g', 'g'],
 *   turnScores: [[0, 1], [0.5]],
 * });
 * // row 0: R = [1, 1]; row 1: R = [0.5]; μ = 0.75, σ ≈ 0.354 → row 0 turns ≈ +0.707, row 1 ≈ -0.707
 * ```
 */
export function computeGrpoPerStepAdvantage(input: AdvantageInput, options: GrpoPerStepOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, tokenLevelRewards, responseMask, turnScores } = input;
  assertLength('tokenLevelRewards', tokenLevelRewards, n);
  assertLength('responseMask', responseMask, n);
  const index = requireIndex(input.index, batch);
  const hasTurnScores = turnScores != null && turnScores.length === batch && turnScores.some((ts) => ts != null && ts.length > 0);
  if (!hasTurnScores) return computeGrpoOutcomeAdvantage(input, options);

  const gamma = options.gamma ?? 1;
  const epsilon = options.epsilon ?? 1e-6;
  const norm = options.normAdvByStdInGrpo ?? true;
  const boundaries = turnBoundaries(responseMask, batch, seqLen);
  const returns: number[][] = [];
  for (let i = 0; i < batch; i++) {
    const ts = turnScores[i];
    if (ts != null && ts.length > 0) {
      returns.push(cumulativeReturns(ts, gamma));
    } else {
      let total = 0;
      for (let k = i * seqLen; k < (i + 1) * seqLen; k++) {
        if (responseMask[k] !== 0) total += tokenLevelRewards[k] * responseMask[k];
      }
      returns.push([total]);
    }
  }
  const totals = returns.map((r) => (r.length > 0 ? r[0] : 0));
  const advantages = new Float64Array(n);
  for (const rows of groupRows(index).values()) {
    const { mean, std } = groupStats(totals, rows);
    for (const i of rows) {
      const rr = returns[i];
      boundaries[i].forEach(([start, end], turn) => {
        const ret = turn < rr.length ? rr[turn] : rr.length > 0 ? rr[rr.length - 1] : 0;
        const adv = norm ? (ret - mean) / (std + epsilon) : ret - mean;
        for (let t = start; t < end; t++) {
          const k = i * seqLen + t;
          advantages[k] = responseMask[k] === 0 ? 0 : adv * responseMask[k];
        }
      });
    }
  }
  return { advantages, returns: advantages };
}
