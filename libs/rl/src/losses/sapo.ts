/**
 * `policy_loss.loss_mode: sapo` — Soft Adaptive Policy Optimization (verl `compute_policy_loss_sapo`).
 */
import type { LossAggMode } from '../aggregation';
import { checkPolicyInput, finishPolicyLoss } from './policy-loss';
import type { ActorConfig, PolicyLossInput, PolicyLossOutput } from './types';

/**
 * SAPO (arXiv 2511.20347): instead of clipping, the ratio goes through a smooth gate. Per token, with
 * `r = exp(clamp(logProb − oldLogProb, ±20))` and `τ = tau_pos` where `A > 0`, else `tau_neg`:
 * `gate = sigmoid(τ·(r − 1))·4/τ` and `loss = −gate·A` (times rollout IS weights). The gate's slope at
 * `r = 1` is 1, so near on-policy SAPO has the gradient of the plain PPO surrogate; far from it the
 * gradient fades instead of stopping. `dLogProb = −A·4·σ(1 − σ)·r` (0 outside the ±20 clamp).
 * Always aggregated with `seq-mean-token-mean` (the `lossAggMode` argument is ignored, as in verl).
 *
 * Metrics: `ppo_kl = masked_mean(−clamped log-ratio)`; `pg_clipfrac` and `pg_clipfrac_lower` are 0.
 *
 * @example
 * ```ts
 * computePolicyLossSapo(
 *   { batch: 1, seqLen: 2, oldLogProb: [-1, -1], logProb: [-0.9, -1.2], advantages: [1, 1], responseMask: [1, 1] },
 *   'token-mean', { tau_pos: 1, tau_neg: 1.05 });
 * ```
 */
export function computePolicyLossSapo(input: PolicyLossInput, _lossAggMode: LossAggMode = 'seq-mean-token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const tauPos = config.tau_pos ?? 1.0;
  const tauNeg = config.tau_neg ?? 1.05;
  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let klSum = 0;
  for (let k = 0; k < n; k++) {
    const raw = logProb[k] - oldLogProb[k];
    const nkl = Math.min(20, Math.max(-20, raw));
    const ratio = Math.exp(nkl);
    const dRatio = raw >= -20 && raw <= 20 ? ratio : 0;
    const a = A[k];
    const tau = a > 0 ? tauPos : tauNeg;
    const sig = 1 / (1 + Math.exp(-tau * (ratio - 1)));
    const gate = (sig * 4) / tau;
    // d gate / d r = σ(1 − σ)·τ · 4/τ.
    const dGate = 4 * sig * (1 - sig) * dRatio;
    const w = isw ? isw[k] : 1;
    pgLosses[k] = -gate * a * w;
    dToken[k] = -dGate * a * w;
    const m = mask[k];
    maskSum += m;
    if (m !== 0) klSum += -nkl * m;
  }
  return finishPolicyLoss(pgLosses, dToken, input, 'seq-mean-token-mean', config, { maskSum, clipped: 0, klSum, clippedLower: 0 });
}
