/**
 * Masked statistics with verl's exact definitions (`verl/utils/torch_functional.py`): entries where the mask
 * is zero are excluded even when they hold NaN, the mean divides by `mask.sum() + 1e-8`, the variance is
 * Bessel-corrected, and whitening uses `rsqrt(var + 1e-8)`.
 */
import { RlError } from './errors';
import { assertLength, type NumArray } from './shape';

/**
 * `sum(x * mask)` over entries with a non-zero mask (NaN under a zero mask is ignored).
 *
 * @example
 * ```ts
 * maskedSum([1, NaN, 3], [1, 0, 1]); // 4
 * ```
 */
export function maskedSum(values: NumArray, mask: NumArray): number {
  assertLength('mask', mask, values.length);
  let s = 0;
  for (let k = 0; k < values.length; k++) {
    const m = mask[k];
    if (m !== 0) s += values[k] * m;
  }
  return s;
}

/**
 * Row-wise verl `masked_sum(values, mask, axis=-1)` of a `[batch, seqLen]` matrix.
 *
 * @example
 * ```ts
 * maskedSumRows([1, 3, 5, 7], [1, 1, 1, 0], 2, 2); // [4, 5]
 * ```
 */
export function maskedSumRows(values: NumArray, mask: NumArray, batch: number, seqLen: number): Float64Array {
  assertLength('values', values, batch * seqLen);
  assertLength('mask', mask, batch * seqLen);
  const out = new Float64Array(batch);
  for (let i = 0; i < batch; i++) {
    let s = 0;
    for (let t = i * seqLen; t < (i + 1) * seqLen; t++) {
      const m = mask[t];
      if (m !== 0) s += values[t] * m;
    }
    out[i] = s;
  }
  return out;
}

/**
 * verl's `masked_mean`: `masked_sum / (mask.sum() + 1e-8)`; 0 for an all-zero mask.
 *
 * @example
 * ```ts
 * maskedMean([1, 2, 3], [1, 1, 0]); // ≈ 1.5
 * ```
 */
export function maskedMean(values: NumArray, mask: NumArray): number {
  let n = 0;
  for (let k = 0; k < mask.length; k++) n += mask[k];
  return maskedSum(values, mask) / (n + 1e-8);
}

/**
 * Row-wise verl `masked_mean(values, mask, axis=-1)` of a `[batch, seqLen]` matrix.
 *
 * @example
 * ```ts
 * maskedMeanRows([1, 3, 5, 7], [1, 1, 1, 0], 2, 2); // ≈ [2, 5]
 * ```
 */
export function maskedMeanRows(values: NumArray, mask: NumArray, batch: number, seqLen: number): Float64Array {
  assertLength('values', values, batch * seqLen);
  assertLength('mask', mask, batch * seqLen);
  const out = new Float64Array(batch);
  for (let i = 0; i < batch; i++) {
    let s = 0;
    let n = 0;
    for (let t = i * seqLen; t < (i + 1) * seqLen; t++) {
      const m = mask[t];
      if (m !== 0) s += values[t] * m;
      n += m;
    }
    out[i] = s / (n + 1e-8);
  }
  return out;
}

/**
 * verl's `masked_var`: the masked mean of the squared deviations from the masked mean, times
 * `n / (n - 1)` with `n = Σ mask` when `unbiased` (the default). Like verl, the unbiased variance raises
 * (`RL_DEGENERATE_INPUT`) when `n` is 0 or 1.
 *
 * @example
 * ```ts
 * maskedVar([1, 2, 3, 100], [1, 1, 1, 0]); // ≈ 1
 * ```
 */
export function maskedVar(values: NumArray, mask: NumArray, unbiased = true): number {
  const mean = maskedMean(values, mask);
  let s = 0;
  let n = 0;
  for (let k = 0; k < values.length; k++) {
    const m = mask[k];
    n += m;
    if (m !== 0) {
      const c = values[k] - mean;
      s += c * c * m;
    }
  }
  let variance = s / (n + 1e-8);
  if (unbiased) {
    if (n === 0) throw new RlError('RL_DEGENERATE_INPUT', 'At least one element in the mask has to be 1.', 'mask');
    if (n === 1) throw new RlError('RL_DEGENERATE_INPUT', 'The sum of the mask is one, which can cause a division by zero.', 'mask');
    variance *= n / (n - 1);
  }
  return variance;
}

/**
 * verl's `masked_whiten`: `(x - mean) * rsqrt(var + 1e-8)` with masked mean/variance, applied to *every*
 * entry (masked ones too, as verl does; multiply by the mask yourself when needed).
 *
 * Guard: verl raises when the mask sums to 0 or 1 (the unbiased variance is undefined); here the result
 * is all zeros, i.e. no learning signal instead of a crash, so the estimators that whiten (`gae`,
 * `reinforce_plus_plus`, `reinforce_plus_plus_baseline`) survive a batch with a single valid token.
 *
 * @example
 * ```ts
 * maskedWhiten([1, 2, 3, 0], [1, 1, 1, 0]); // ≈ [-1, 0, 1, -2]
 * ```
 */
export function maskedWhiten(values: NumArray, mask: NumArray, shiftMean = true): Float64Array {
  assertLength('mask', mask, values.length);
  const out = new Float64Array(values.length);
  let n = 0;
  for (let k = 0; k < mask.length; k++) n += mask[k];
  if (n === 0 || n === 1 || !Number.isFinite(n)) return out;
  const mean = maskedMean(values, mask);
  const variance = maskedVar(values, mask, true);
  const inv = 1 / Math.sqrt(variance + 1e-8);
  for (let k = 0; k < values.length; k++) {
    out[k] = (values[k] - mean) * inv + (shiftMean ? 0 : mean);
  }
  return out;
}
