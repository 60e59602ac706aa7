/**
 * `policy_loss.loss_mode: kl_cov` — KL-Cov (verl `compute_policy_loss_kl_cov`, from "The Entropy
 * Mechanism of RL for Reasoning LMs", arXiv 2505.22617).
 */
import { aggLoss, type LossAggMode } from '../aggregation';
import { checkPolicyInput } from './policy-loss';
import { aggOptionsFromConfig, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';
import { RlError } from '../errors';

/**
 * KL-Cov: unclipped policy gradient `loss = -A · r` (`r = exp(logProb - old)`, no clamp), except on the
 * `max(⌊n_valid · kl_cov_ratio⌋, 1)` unmasked tokens with the largest covariance
 * `(A - mean A) · (logProb - mean logProb)` (plain means over unmasked tokens, log-probs detached), which
 * get `-A · r + ppo_kl_coef · |logProb - old|`. Ties in the top-k go to the lower flat index.
 * Metrics: only `ppo_kl = masked_mean(|log-ratio|)`, as verl.
 *
 * @example
 * ```ts
 * computePolicyLossKlCov(input, 'token-mean', { policy_loss: { loss_mode: 'kl_cov', kl_cov_ratio: 0.0002, ppo_kl_coef: 1 } });
 * ```
 */
export function computePolicyLossKlCov(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const pl = config.policy_loss ?? {};
  const klCovRatio = pl.kl_cov_ratio ?? 0.0002;
  const coef = pl.ppo_kl_coef ?? 1.0;
  if (!(klCovRatio > 0)) throw new RlError('RL_INVALID_CONFIG', 'kl_cov_ratio should be larger than 0.', 'policy_loss.kl_cov_ratio');

  const valid: number[] = [];
  for (let k = 0; k < n; k++) if (mask[k] > 0) valid.push(k);
  const selected = new Uint8Array(n);
  if (valid.length > 0) {
    let sa = 0;
    let sl = 0;
    for (const k of valid) {
      sa += A[k];
      sl += logProb[k];
    }
    const ma = sa / valid.length;
    const ml = sl / valid.length;
    const cov = valid.map((k) => (A[k] - ma) * (logProb[k] - ml));
    const topK = Math.max(1, Math.trunc(valid.length * klCovRatio));
    const order = valid.map((_, j) => j).sort((x, y) => cov[y] - cov[x] || x - y);
    for (let j = 0; j < topK; j++) selected[valid[order[j]]] = 1;
  }

  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let absKl = 0;
  for (let k = 0; k < n; k++) {
    const nkl = logProb[k] - oldLogProb[k];
    const ratio = Math.exp(nkl);
    let loss = -A[k] * ratio;
    let d = -A[k] * ratio;
    if (selected[k]) {
      loss += coef * Math.abs(nkl);
      d += coef * Math.sign(nkl);
    }
    const w = isw ? isw[k] : 1;
    pgLosses[k] = loss * w;
    dToken[k] = d * w;
    maskSum += mask[k];
    if (mask[k] !== 0) absKl += Math.abs(nkl) * mask[k];
  }
  const { loss, weights } = aggLoss(pgLosses, mask, input, lossAggMode, aggOptionsFromConfig(config));
  const dLogProb = new Float64Array(n);
  for (let k = 0; k < n; k++) dLogProb[k] = weights[k] === 0 ? 0 : weights[k] * dToken[k];
  return {
    loss,
    dLogProb,
    pgLosses,
    metrics: { 'actor/ppo_kl': absKl / (maskSum + 1e-8) },
  };
}
