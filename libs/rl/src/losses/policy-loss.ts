/**
 * `policy_loss.loss_mode: vanilla` — PPO clipped surrogate with asymmetric clipping and dual-clip
 * (verl `compute_policy_loss_vanilla`).
 */
import { aggLoss, type LossAggMode } from '../aggregation';
import { assertLength, checkShape } from '../shape';
import { aggOptionsFromConfig, maxGrad, minGrad, resolveClip, type ActorConfig, type PolicyLossInput, type PolicyLossMetrics, type PolicyLossOutput } from './types';
import { RlError } from '../errors';

/**
 * Validates the common inputs of a policy loss and returns `batch * seqLen`.
 *
 * @example
 * ```ts
 * checkPolicyInput({ batch: 1, seqLen: 1, oldLogProb: [0], logProb: [0], advantages: [1], responseMask: [1] }); // 1
 * ```
 */
export function checkPolicyInput(input: PolicyLossInput): number {
  const n = checkShape(input);
  assertLength('oldLogProb', input.oldLogProb, n);
  assertLength('logProb', input.logProb, n);
  assertLength('advantages', input.advantages, n);
  assertLength('responseMask', input.responseMask, n);
  if (input.rolloutIsWeights != null) assertLength('rolloutIsWeights', input.rolloutIsWeights, n);
  return n;
}

/**
 * Vanilla PPO with verl's exact semantics. Per token, with `r = exp(clamp(logProb - oldLogProb, -20, 20))`:
 *
 * - `l1 = -A·r`, `l2 = -A·clamp(r, 1 - clip_ratio_low, 1 + clip_ratio_high)`, `clip1 = max(l1, l2)`;
 * - dual clip (only where `A < 0`): `loss = min(-A·clip_ratio_c, clip1)`, otherwise `loss = clip1`;
 * - optional rollout IS weights multiply the per-token loss, which is then aggregated by `lossAggMode`.
 *
 * Metrics: `pg_clipfrac = masked_mean(l2 > l1)`, `pg_clipfrac_lower = masked_mean(clip1 > -A·c and A < 0)`,
 * `ppo_kl = masked_mean(-clamped log-ratio)`. `dLogProb` is the exact derivative (zero on clipped tokens
 * and outside the ±20 clamp; ties split as torch does).
 *
 * @example
 * ```ts
 * const out = computePolicyLossVanilla(
 *   { batch: 1, seqLen: 2, oldLogProb: [-1, -1], logProb: [-0.9, -1.5], advantages: [1, -1], responseMask: [1, 1] },
 *   'token-mean', { clip_ratio_low: 0.2, clip_ratio_high: 0.28, clip_ratio_c: 3 });
 * out.loss; out.dLogProb; out.metrics['actor/pg_clipfrac'];
 * ```
 */
export function computePolicyLossVanilla(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { low, high, c } = resolveClip(config);
  if (!(c > 1))
    throw new RlError('RL_INVALID_CONFIG', `The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get the value: ${c}.`, 'clip_ratio_c');
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let clipCount = 0;
  let clipLowerCount = 0;
  let klSum = 0;
  for (let k = 0; k < n; k++) {
    const raw = logProb[k] - oldLogProb[k];
    const nkl = Math.min(20, Math.max(-20, raw));
    const dnkl = raw >= -20 && raw <= 20 ? 1 : 0;
    const ratio = Math.exp(nkl);
    const dRatio = ratio * dnkl;
    const a = A[k];
    const l1 = -a * ratio;
    const clipped = Math.min(1 + high, Math.max(1 - low, ratio));
    const l2 = -a * clipped;
    const d1 = -a * dRatio;
    const d2 = ratio >= 1 - low && ratio <= 1 + high ? d1 : 0;
    const clip1 = Math.max(l1, l2);
    const dClip1 = maxGrad(l1, l2, d1, d2);
    let loss = clip1;
    let d = dClip1;
    if (a < 0) {
      const l3 = -a * c;
      loss = Math.min(l3, clip1);
      d = minGrad(l3, clip1, 0, dClip1);
    }
    const w = isw ? isw[k] : 1;
    pgLosses[k] = loss * w;
    dToken[k] = d * w;
    const m = mask[k];
    maskSum += m;
    if (m !== 0) {
      klSum += -nkl * m;
      if (l2 > l1) clipCount += m;
      if (clip1 > -a * c && a < 0) clipLowerCount += m;
    }
  }
  return finishPolicyLoss(pgLosses, dToken, input, lossAggMode, config, { maskSum, clipped: clipCount, klSum, clippedLower: clipLowerCount });
}

/**
 * Masked token counts behind the verl metrics a policy loss reports; a metric whose count is absent is
 * not reported (verl's function does not return it).
 */
export interface PolicyLossCounts {
  maskSum: number;
  clipped?: number;
  clippedLower?: number;
  klSum?: number;
}

/**
 * The shared end of every token-level policy loss: aggregates the per-token losses, applies the chain
 * rule through the aggregation weights to the per-token derivatives `dToken` (d pgLoss / d logProb),
 * and turns the masked counts into verl's metrics (`masked_mean`, so divided by `Σ mask + 1e-8`).
 */
export function finishPolicyLoss(
  pgLosses: Float64Array,
  dToken: Float64Array,
  input: PolicyLossInput,
  lossAggMode: LossAggMode,
  config: ActorConfig,
  counts: PolicyLossCounts,
): PolicyLossOutput {
  const { loss, weights } = aggLoss(pgLosses, input.responseMask, input, lossAggMode, aggOptionsFromConfig(config));
  const dLogProb = new Float64Array(pgLosses.length);
  for (let k = 0; k < dLogProb.length; k++) dLogProb[k] = weights[k] === 0 ? 0 : weights[k] * dToken[k];
  const denom = counts.maskSum + 1e-8;
  const metrics: PolicyLossMetrics = {};
  if (counts.clipped !== undefined) metrics['actor/pg_clipfrac'] = counts.clipped / denom;
  if (counts.klSum !== undefined) metrics['actor/ppo_kl'] = counts.klSum / denom;
  if (counts.clippedLower !== undefined) metrics['actor/pg_clipfrac_lower'] = counts.clippedLower / denom;
  return { loss, dLogProb, pgLosses, metrics };
}
