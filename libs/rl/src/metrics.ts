/**
 * Batch summary metrics with verl's names (`verl/trainer/ppo/metric_utils.py`, `compute_data_metrics`).
 */
import { assertLength, checkShape, rowSums, type BatchShape, type NumArray } from './shape';

/**
 * Input of {@link computeDataMetrics}; matrices `[batch, seqLen]`.
 *
 * @example
 * ```ts
 * const input: DataMetricsInput = {
 *   batch: 1, seqLen: 2, tokenLevelScores: [0, 1], tokenLevelRewards: [0, 1],
 *   advantages: [0.5, 0.5], returns: [0.5, 0.5], responseMask: [1, 1],
 * };
 * ```
 */
export interface DataMetricsInput extends BatchShape {
  /** Scores from the reward function (before KL penalty). */
  tokenLevelScores: NumArray;
  /** Rewards used for training (after KL penalty, if any). */
  tokenLevelRewards: NumArray;
  /** Advantages. */
  advantages: NumArray;
  /** Returns. */
  returns: NumArray;
  /** Response mask; the response length of a row is its sum, the maximum length is `seqLen`. */
  responseMask: NumArray;
  /** Critic values (adds `critic/values/*` and `critic/vf_explained_var`). */
  values?: NumArray;
  /** Prompt length per row (adds `prompt_length/*`). */
  promptLengths?: NumArray;
  /** Maximum prompt length, for `prompt_length/clip_ratio`. */
  maxPromptLength?: number;
}

function stats(out: Record<string, number>, prefix: string, xs: number[]): void {
  if (xs.length === 0) {
    out[`${prefix}/mean`] = 0;
    out[`${prefix}/max`] = 0;
    out[`${prefix}/min`] = 0;
    return;
  }
  let s = 0;
  let mx = -Infinity;
  let mn = Infinity;
  for (const x of xs) {
    s += x;
    if (x > mx) mx = x;
    if (x < mn) mn = x;
  }
  out[`${prefix}/mean`] = s / xs.length;
  out[`${prefix}/max`] = mx;
  out[`${prefix}/min`] = mn;
}

function sampleVar(xs: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  let s = 0;
  for (const x of xs) s += x;
  const mean = s / n;
  let ss = 0;
  for (const x of xs) ss += (x - mean) * (x - mean);
  return ss / (n - 1);
}

/**
 * verl's `compute_data_metrics` plus standard deviations:
 *
 * - `critic/score/{mean,max,min,std}`, `critic/rewards/{mean,max,min,std}`: per-sequence sums over
 *   non-aborted rows (a row with no response token is "aborted"); `std` (unbiased, 0 for < 2 rows) is an
 *   addition to verl's keys;
 * - `critic/advantages/*`, `critic/returns/*` (and `critic/values/*`, `critic/vf_explained_var =
 *   1 - var(returns - values) / (var(returns) + 1e-5)` with a critic) over unmasked tokens;
 * - `response_length/{mean,max,min,clip_ratio}` (clip ratio = fraction of rows of length `seqLen`),
 *   `response/aborted_ratio`, `response_length_non_aborted/*`, and `prompt_length/*` when given.
 *
 * Empty selections give 0 instead of verl's NaN.
 *
 * @example
 * ```ts
 * const m = computeDataMetrics({ batch: 2, seqLen: 2, tokenLevelScores: [0, 1, 0, 0], tokenLevelRewards: [0, 1, 0, 0],
 *   advantages: [1, 1, -1, 0], returns: [1, 1, -1, 0], responseMask: [1, 1, 1, 0] });
 * m['critic/score/mean']; // 0.5
 * ```
 */
export function computeDataMetrics(input: DataMetricsInput): Record<string, number> {
  const n = checkShape(input);
  const { batch, seqLen, responseMask: mask } = input;
  for (const key of ['tokenLevelScores', 'tokenLevelRewards', 'advantages', 'returns', 'responseMask'] as const) {
    assertLength(key, input[key], n);
  }
  const score = rowSums(input.tokenLevelScores, input);
  const reward = rowSums(input.tokenLevelRewards, input);
  const length = rowSums(mask, input);
  const nonAborted: number[] = [];
  for (let i = 0; i < batch; i++) if (length[i] !== 0) nonAborted.push(i);
  const out: Record<string, number> = {};
  const sc = nonAborted.map((i) => score[i]);
  const rw = nonAborted.map((i) => reward[i]);
  stats(out, 'critic/score', sc);
  out['critic/score/std'] = Math.sqrt(sampleVar(sc));
  stats(out, 'critic/rewards', rw);
  out['critic/rewards/std'] = Math.sqrt(sampleVar(rw));
  const adv: number[] = [];
  const ret: number[] = [];
  const val: number[] = [];
  for (let k = 0; k < n; k++) {
    if (mask[k] === 0) continue;
    adv.push(input.advantages[k]);
    ret.push(input.returns[k]);
    if (input.values) val.push(input.values[k]);
  }
  stats(out, 'critic/advantages', adv);
  stats(out, 'critic/returns', ret);
  if (input.values) {
    assertLength('values', input.values, n);
    stats(out, 'critic/values', val);
    out['critic/vf_explained_var'] = ret.length >= 2 ? 1 - sampleVar(ret.map((r, j) => r - val[j])) / (sampleVar(ret) + 1e-5) : 0;
  }
  const lens = Array.from(length);
  stats(out, 'response_length', lens);
  out['response_length/clip_ratio'] = batch > 0 ? lens.filter((l) => l === seqLen).length / batch : 0;
  out['response/aborted_ratio'] = batch > 0 ? (batch - nonAborted.length) / batch : 0;
  const naLens = nonAborted.map((i) => length[i]);
  stats(out, 'response_length_non_aborted', naLens);
  out['response_length_non_aborted/clip_ratio'] = naLens.length > 0 ? naLens.filter((l) => l === seqLen).length / naLens.length : 0;
  if (input.promptLengths) {
    assertLength('promptLengths', input.promptLengths, batch);
    const pl = Array.from(input.promptLengths);
    stats(out, 'prompt_length', pl);
    out['prompt_length/clip_ratio'] = batch > 0 ? pl.filter((l) => l === input.maxPromptLength).length / batch : 0;
  }
  return out;
}
