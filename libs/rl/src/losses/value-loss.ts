/**
 * Clipped value-function loss of the PPO critic (verl `compute_value_loss`).
 */
import { aggLoss, type AggOptions, type LossAggMode } from '../aggregation';
import { assertLength, checkShape, type BatchShape, type NumArray } from '../shape';

/**
 * Input of {@link computeValueLoss}; all `[batch, seqLen]`.
 *
 * @example
 * ```ts
 * const input: ValueLossInput = { batch: 1, seqLen: 2, vpreds: [0.4, 0.1], returns: [1, 1], values: [0.3, 0], responseMask: [1, 1] };
 * ```
 */
export interface ValueLossInput extends BatchShape {
  /** Current value predictions (gradient is taken w.r.t. these). */
  vpreds: NumArray;
  /** Value targets (e.g. GAE returns). */
  returns: NumArray;
  /** Value predictions at rollout time (the clip centre). */
  values: NumArray;
  /** Response mask. */
  responseMask: NumArray;
}

/**
 * Output of {@link computeValueLoss}.
 *
 * @example
 * ```ts
 * const { loss, dVpreds }: ValueLossOutput = computeValueLoss(input, 0.5);
 * ```
 */
export interface ValueLossOutput {
  /** `0.5 · agg(max((v - R)², (clip(v, old ± c) - R)²))`. */
  loss: number;
  /** Fraction of unmasked tokens where the clipped term was larger (verl `vf_clipfrac`). */
  vfClipfrac: number;
  /** `d loss / d vpreds` per token. */
  dVpreds: Float64Array;
}

/**
 * PPO clipped value loss: `vclip = clamp(vpreds, values - cliprangeValue, values + cliprangeValue)`,
 * `loss = 0.5 · agg_loss(max((vpreds - returns)², (vclip - returns)²))` (verl `critic.cliprange_value`,
 * `critic.loss_agg_mode`). The gradient is zero on tokens where the clipped term wins and `vpreds` lies
 * outside the clip range.
 *
 * @example
 * ```ts
 * computeValueLoss({ batch: 1, seqLen: 2, vpreds: [0.9, 0], returns: [1, 1], values: [0, 0], responseMask: [1, 1] }, 0.5);
 * ```
 */
export function computeValueLoss(input: ValueLossInput, cliprangeValue: number, lossAggMode: LossAggMode = 'token-mean', aggOptions: AggOptions = {}): ValueLossOutput {
  const n = checkShape(input);
  const { vpreds, returns, values, responseMask: mask } = input;
  assertLength('vpreds', vpreds, n);
  assertLength('returns', returns, n);
  assertLength('values', values, n);
  assertLength('responseMask', mask, n);
  const mat = new Float64Array(n);
  const dTok = new Float64Array(n);
  let maskSum = 0;
  let clipCount = 0;
  for (let k = 0; k < n; k++) {
    const lo = values[k] - cliprangeValue;
    const hi = values[k] + cliprangeValue;
    const v = vpreds[k];
    const vc = Math.max(Math.min(v, hi), lo);
    const e1 = v - returns[k];
    const e2 = vc - returns[k];
    const l1 = e1 * e1;
    const l2 = e2 * e2;
    const d1 = 2 * e1;
    const inside = v >= lo && v <= hi;
    const d2 = inside ? 2 * e2 : 0;
    mat[k] = Math.max(l1, l2);
    dTok[k] = l1 > l2 ? d1 : l2 > l1 ? d2 : 0.5 * (d1 + d2);
    maskSum += mask[k];
    if (mask[k] !== 0 && l2 > l1) clipCount += mask[k];
  }
  const { loss, weights } = aggLoss(mat, mask, input, lossAggMode, aggOptions);
  const dVpreds = new Float64Array(n);
  for (let k = 0; k < n; k++) dVpreds[k] = weights[k] === 0 ? 0 : 0.5 * weights[k] * dTok[k];
  return { loss: 0.5 * loss, vfClipfrac: clipCount / (maskSum + 1e-8), dVpreds };
}
