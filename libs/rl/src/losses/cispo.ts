/**
 * `policy_loss.loss_mode: cispo` — Clipped IS-weight Policy Optimization (verl `compute_policy_loss_cispo`).
 */
import type { LossAggMode } from '../aggregation';
import { checkPolicyInput, finishPolicyLoss } from './policy-loss';
import { resolveClip, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';

/**
 * CISPO (MiniMax-M1, arXiv 2506.13585): the importance weight is clipped and *detached* instead of the
 * surrogate being clipped, so every token keeps a gradient:
 * `loss_t = -sg(clamp(r, 1 - low, 1 + high)) · A · logProb`, `r = exp(clamp(logProb - old, ±20))`, and
 * `dLogProb = -clamp(r) · A` times the aggregation weight.
 *
 * Metrics: `pg_clipfrac = masked_mean(r ≠ clamp(r))`, `ppo_kl = masked_mean(-clamped log-ratio)`,
 * `pg_clipfrac_lower = 0`.
 *
 * @example
 * ```ts
 * computePolicyLossCispo(
 *   { batch: 1, seqLen: 1, oldLogProb: [-2], logProb: [-1], advantages: [1], responseMask: [1] },
 *   'token-mean', { clip_ratio_low: 0.2, clip_ratio_high: 0.28 });
 * // r = e ≈ 2.718 → weight 1.28: loss = 1.28, dLogProb = [-1.28]
 * ```
 */
export function computePolicyLossCispo(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const { low, high } = resolveClip(config);
  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let clipCount = 0;
  let klSum = 0;
  for (let k = 0; k < n; k++) {
    const nkl = Math.min(20, Math.max(-20, logProb[k] - oldLogProb[k]));
    const ratio = Math.exp(nkl);
    const clipped = Math.min(1 + high, Math.max(1 - low, ratio));
    const w = isw ? isw[k] : 1;
    pgLosses[k] = -clipped * A[k] * logProb[k] * w;
    dToken[k] = -clipped * A[k] * w;
    const m = mask[k];
    maskSum += m;
    if (m !== 0) {
      klSum += -nkl * m;
      if (ratio !== clipped) clipCount += m;
    }
  }
  return finishPolicyLoss(pgLosses, dToken, input, lossAggMode, config, { maskSum, clipped: clipCount, klSum, clippedLower: 0 });
}
