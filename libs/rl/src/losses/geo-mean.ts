/**
 * `policy_loss.loss_mode: geo_mean` — Geometric-Mean Policy Optimization (verl `compute_policy_loss_geo_mean`).
 */
import type { LossAggMode } from '../aggregation';
import { checkPolicyInput } from './policy-loss';
import { resolveClip, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';

/**
 * GMPO (arXiv 2507.20673): per token the log-ratio `x = logProb - old` is clipped to
 * `[-clip_ratio_low, clip_ratio_high]` in the direction that matters for the advantage sign
 * (`sgn(A) · min(sgn(A)·x, sgn(A)·clamp(x))`); the sequence ratio is the geometric mean
 * `exp(Σ x_clipped·mask / (len + 1e-8))`, the sequence advantage the token mean of `A`; the loss is
 * `mean_i(-adv_i · ratio_i)` over *all* rows (the `lossAggMode` argument is ignored, as in verl). Rollout
 * IS weights enter as their per-sequence geometric mean. Only sequence-level advantages are meaningful here.
 *
 * Metrics: `pg_clipfrac` / `pg_clipfrac_lower` = fraction of tokens whose log-ratio was outside the clip
 * range with `A > 0` / `A < 0`; `ppo_kl = masked_mean(-x)`.
 *
 * @example
 * ```ts
 * computePolicyLossGeoMean(
 *   { batch: 1, seqLen: 2, oldLogProb: [-1, -1], logProb: [-0.9, -1.1], advantages: [1, 1], responseMask: [1, 1] },
 *   'token-mean', { clip_ratio: 0.4 });
 * ```
 */
export function computePolicyLossGeoMean(input: PolicyLossInput, _lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { batch, seqLen, oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const { low, high } = resolveClip(config);
  const dLogProb = new Float64Array(n);
  let loss = 0;
  let maskSum = 0;
  let klSum = 0;
  let clipHi = 0;
  let clipLo = 0;
  for (let i = 0; i < batch; i++) {
    let len = 0;
    let sumMin = 0;
    let sumAdv = 0;
    let sumLogW = 0;
    for (let k = i * seqLen; k < (i + 1) * seqLen; k++) {
      const m = mask[k];
      len += m;
      if (m === 0) continue;
      const x = logProb[k] - oldLogProb[k];
      const xc = Math.min(high, Math.max(-low, x));
      const s = Math.sign(A[k]);
      sumMin += s * Math.min(s * x, s * xc) * m;
      sumAdv += A[k] * m;
      if (isw) sumLogW += Math.log(isw[k] + 1e-10) * m;
      klSum += -x * m;
      if (x !== xc && A[k] > 0) clipHi += m;
      if (x !== xc && A[k] < 0) clipLo += m;
    }
    maskSum += len;
    const ratio = Math.exp(sumMin / (len + 1e-8));
    const adv = sumAdv / (len + 1e-8);
    const seqIs = isw ? Math.exp(sumLogW / (len + 1e-8)) : 1;
    loss += -adv * ratio * seqIs;
    const coef = (-adv * ratio * seqIs) / batch / (len + 1e-8);
    for (let k = i * seqLen; k < (i + 1) * seqLen; k++) {
      const m = mask[k];
      if (m === 0) continue;
      const x = logProb[k] - oldLogProb[k];
      const s = Math.sign(A[k]);
      // d/dx of s·min(s·x, s·clamp(x)): 1 where x is inside the clip range or on its harmless side, else 0.
      const xc = Math.min(high, Math.max(-low, x));
      const inRange = x >= -low && x <= high;
      const a = s * x;
      const b = s * xc;
      const dMin = a < b ? s * s : b < a ? s * s * (inRange ? 1 : 0) : 0.5 * (s * s + s * s * (inRange ? 1 : 0));
      dLogProb[k] = coef * m * dMin;
    }
  }
  loss = batch > 0 ? loss / batch : 0;
  const denom = maskSum + 1e-8;
  return {
    loss,
    dLogProb,
    metrics: { 'actor/pg_clipfrac': clipHi / denom, 'actor/ppo_kl': klSum / denom, 'actor/pg_clipfrac_lower': clipLo / denom },
  };
}
