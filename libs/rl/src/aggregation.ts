/**
 * `loss_agg_mode`: how a `[batch, seqLen]` per-token loss matrix becomes one scalar (verl's `agg_loss`).
 *
 * Every mode is linear in the loss matrix, so each is described by a weight matrix `W` with
 * `loss = Σ W[i,t] · loss_mat[i,t]` over unmasked entries; `W` is also `d loss / d loss_mat`, which is
 * what the gradient coefficients of every loss in this package are built from.
 */
import { assertLength, checkShape, type BatchShape, type NumArray } from './shape';
import { RlError } from './errors';

/**
 * verl's `loss_agg_mode` values.
 *
 * @example
 * ```ts
 * const mode: LossAggMode = 'seq-mean-token-sum-norm';
 * ```
 */
export type LossAggMode = 'token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';

/**
 * All supported {@link LossAggMode} values.
 *
 * @example
 * ```ts
 * LOSS_AGG_MODES.includes('token-mean'); // true
 * ```
 */
export const LOSS_AGG_MODES: readonly LossAggMode[] = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'];

/**
 * Global-batch normalisers (verl's `global_batch_info` / `agg_loss` keyword arguments). Leave them unset for
 * a single process: the denominators are then taken from the arrays passed in.
 *
 * @example
 * ```ts
 * const opts: AggOptions = { lossScaleFactor: 4096 }; // constant Dr. GRPO normaliser
 * ```
 */
export interface AggOptions {
  /** Data-parallel size; the loss is multiplied by it except in `seq-mean-token-sum-norm` (verl `dp_size`). Default 1. */
  dpSize?: number;
  /** Number of unmasked tokens in the global batch, for `token-mean` (verl `batch_num_tokens`). */
  batchNumTokens?: number;
  /** Number of non-empty sequences in the global batch, for `seq-mean-token-sum` and `seq-mean-token-mean` (verl `global_batch_size`). */
  globalBatchSize?: number;
  /**
   * The whole divisor of `seq-mean-token-sum-norm` (verl `loss_scale_factor`); default `seqLen`, the padded
   * response length. Set it to a constant (e.g. the maximum response length) to keep it fixed across steps,
   * as Dr. GRPO intends.
   */
  lossScaleFactor?: number;
}

/**
 * Result of {@link aggLoss}.
 *
 * @example
 * ```ts
 * const { loss, weights }: AggLossResult = aggLoss([1, 2], [1, 1], { batch: 1, seqLen: 2 }, 'token-mean');
 * ```
 */
export interface AggLossResult {
  /** The aggregated scalar. */
  loss: number;
  /** `d loss / d loss_mat[i,t]` (zero where the mask is zero). */
  weights: Float64Array;
}

/**
 * Checks a `loss_agg_mode` string.
 *
 * @example
 * ```ts
 * isLossAggMode('token-mean'); // true
 * ```
 */
export function isLossAggMode(mode: unknown): mode is LossAggMode {
  return typeof mode === 'string' && (LOSS_AGG_MODES as readonly string[]).includes(mode);
}

/**
 * The weight matrix `W = d loss / d loss_mat` of a `loss_agg_mode` (see the module comment), with verl's
 * definitions (`agg_loss` at the commit this package follows):
 *
 * - `token-mean`: `W = mask / batchNumTokens · dpSize` (default `batchNumTokens = Σ mask`);
 * - `seq-mean-token-sum`: `W = mask / globalBatchSize · dpSize`, `globalBatchSize` = number of rows with at
 *   least one unmasked token (fully masked rows are excluded);
 * - `seq-mean-token-mean`: `W[i,·] = mask[i,·] / (Σ_t mask[i,t] + 1e-8) / globalBatchSize · dpSize`;
 * - `seq-mean-token-sum-norm`: `W = mask / lossScaleFactor` (default `seqLen`, the padded length). This
 *   mode divides by neither the number of rows nor anything else, and `dpSize` does not apply: the loss
 *   grows with the batch, exactly as in verl.
 *
 * Guard: where verl divides 0 by 0 (no unmasked token / no non-empty row) the weights are all zero and
 * the loss is 0.
 *
 * @example
 * ```ts
 * aggWeights([1, 1, 0, 1, 0, 0], { batch: 2, seqLen: 3 }, 'seq-mean-token-mean');
 * // ≈ [0.25, 0.25, 0, 0.5, 0, 0]
 * ```
 */
export function aggWeights(lossMask: NumArray, shape: BatchShape, mode: LossAggMode, options: AggOptions = {}): Float64Array {
  const n = checkShape(shape);
  assertLength('lossMask', lossMask, n);
  const { batch, seqLen } = shape;
  const dp = options.dpSize ?? 1;
  const w = new Float64Array(n);
  switch (mode) {
    case 'token-mean': {
      let tokens = 0;
      for (let k = 0; k < n; k++) tokens += lossMask[k];
      const denom = options.batchNumTokens ?? tokens;
      if (denom === 0) return w;
      for (let k = 0; k < n; k++) w[k] = lossMask[k] === 0 ? 0 : (lossMask[k] / denom) * dp;
      return w;
    }
    case 'seq-mean-token-sum-norm': {
      // verl: Σ loss·mask / S, with no division by the number of rows and no dp_size factor.
      const scale = options.lossScaleFactor ?? seqLen;
      for (let k = 0; k < n; k++) w[k] = lossMask[k] === 0 ? 0 : lossMask[k] / scale;
      return w;
    }
    case 'seq-mean-token-sum':
    case 'seq-mean-token-mean': {
      const rowTokens = new Float64Array(batch);
      let nonEmpty = 0;
      for (let i = 0; i < batch; i++) {
        let s = 0;
        for (let t = i * seqLen; t < (i + 1) * seqLen; t++) s += lossMask[t];
        rowTokens[i] = s;
        if (s > 0) nonEmpty++;
      }
      const denom = options.globalBatchSize ?? nonEmpty;
      if (denom === 0) return w;
      const scale = dp / denom;
      for (let i = 0; i < batch; i++) {
        if (!(rowTokens[i] > 0)) continue;
        const rowScale = mode === 'seq-mean-token-mean' ? scale / (rowTokens[i] + 1e-8) : scale;
        for (let t = i * seqLen; t < (i + 1) * seqLen; t++) {
          w[t] = lossMask[t] === 0 ? 0 : lossMask[t] * rowScale;
        }
      }
      return w;
    }
    default:
      throw new RlError('RL_UNKNOWN_NAME', `Invalid loss_agg_mode: ${String(mode)}`, 'loss_agg_mode');
  }
}

/**
 * verl's `agg_loss`: aggregates a per-token loss matrix into a scalar and returns the weights
 * `d loss / d loss_mat` (see {@link aggWeights} for each mode's definition). NaN/Inf under a zero mask
 * never leaks into the result.
 *
 * @example
 * ```ts
 * const { loss } = aggLoss([1, 2, 3, 4], [1, 1, 1, 0], { batch: 2, seqLen: 2 }, 'token-mean');
 * // loss = (1 + 2 + 3) / 3 = 2
 * ```
 */
export function aggLoss(lossMat: NumArray, lossMask: NumArray, shape: BatchShape, mode: LossAggMode, options: AggOptions = {}): AggLossResult {
  const n = checkShape(shape);
  assertLength('lossMat', lossMat, n);
  const weights = aggWeights(lossMask, shape, mode, options);
  let loss = 0;
  for (let k = 0; k < n; k++) {
    if (weights[k] !== 0) loss += weights[k] * lossMat[k];
  }
  return { loss, weights };
}
