/**
 * `policy_loss.loss_mode: gspo` — Group Sequence Policy Optimization (verl `compute_policy_loss_gspo`).
 */
import type { LossAggMode } from '../aggregation';
import { checkPolicyInput, finishPolicyLoss } from './policy-loss';
import { maxGrad, resolveClip, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';

/**
 * GSPO (arXiv 2507.18071). The importance ratio is per sequence, the geometric mean of the token ratios:
 * `s_i = exp(min(Σ_t (logProb - oldLogProb)·mask / max(len_i, 1), 10))`. verl's token-level form
 * `log s_{i,t} = sg(log s_i) + logProb - sg(logProb)` has value `s_i` and gradient `s_i · ∇logProb_{i,t}`.
 * Per token `l1 = -A·s_i`, `l2 = -A·clamp(s_i, 1 - low, 1 + high)`, loss = `max(l1, l2)`, always aggregated
 * with `seq-mean-token-mean` (the `lossAggMode` argument is ignored, as in verl). GSPO is normally run with
 * tiny clip ranges, e.g. `clip_ratio_low: 3e-4, clip_ratio_high: 4e-4`.
 *
 * Metrics: `pg_clipfrac = masked_mean(l2 > l1)`, `ppo_kl = masked_mean(old - new)` (unclamped),
 * `pg_clipfrac_lower = 0`.
 *
 * @example
 * ```ts
 * computePolicyLossGspo(
 *   { batch: 1, seqLen: 2, oldLogProb: [-1, -1], logProb: [-0.99, -1.02], advantages: [1, 1], responseMask: [1, 1] },
 *   'seq-mean-token-mean', { clip_ratio_low: 3e-4, clip_ratio_high: 4e-4 });
 * ```
 */
export function computePolicyLossGspo(input: PolicyLossInput, _lossAggMode: LossAggMode = 'seq-mean-token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { batch, seqLen, oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const { low, high } = resolveClip(config);
  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let clipCount = 0;
  let klSum = 0;
  for (let i = 0; i < batch; i++) {
    let s = 0;
    let len = 0;
    for (let k = i * seqLen; k < (i + 1) * seqLen; k++) {
      const m = mask[k];
      len += m;
      if (m !== 0) s += (logProb[k] - oldLogProb[k]) * m;
    }
    const seqKl = s / Math.max(len, 1);
    const logRatio = Math.min(seqKl, 10);
    const ratio = Math.exp(logRatio);
    const dRatio = seqKl <= 10 ? ratio : 0;
    const clipped = Math.min(1 + high, Math.max(1 - low, ratio));
    const inRange = ratio >= 1 - low && ratio <= 1 + high;
    for (let k = i * seqLen; k < (i + 1) * seqLen; k++) {
      const a = A[k];
      const l1 = -a * ratio;
      const l2 = -a * clipped;
      const d1 = -a * dRatio;
      const d = maxGrad(l1, l2, d1, inRange ? d1 : 0);
      const w = isw ? isw[k] : 1;
      pgLosses[k] = Math.max(l1, l2) * w;
      dToken[k] = d * w;
      const m = mask[k];
      maskSum += m;
      if (m !== 0) {
        klSum += -(logProb[k] - oldLogProb[k]) * m;
        if (l2 > l1) clipCount += m;
      }
    }
  }
  return finishPolicyLoss(pgLosses, dToken, input, 'seq-mean-token-mean', config, { maskSum, clipped: clipCount, klSum, clippedLower: 0 });
}
