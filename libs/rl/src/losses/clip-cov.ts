/**
 * `policy_loss.loss_mode: clip_cov` — Clip-Cov (verl `compute_policy_loss_clip_cov`, from "The Entropy
 * Mechanism of RL for Reasoning LMs", arXiv 2505.22617).
 */
import type { LossAggMode } from '../aggregation';
import { maskedMean } from '../masked';
import { checkPolicyInput, finishPolicyLoss } from './policy-loss';
import { maxGrad, resolveClip, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';
import { RlError } from '../errors';

/**
 * Clip-Cov: PPO clipping (no dual clip, no ±20 clamp), plus the gradient of a random subset of
 * high-covariance tokens is cut. Per unmasked token `cov = (A - masked_mean(A)) · (logProb - masked_mean(logProb))`;
 * candidates are unmasked, not already PPO-clipped tokens with `clip_cov_lb < cov < clip_cov_ub`; up to
 * `max(⌊clip_cov_ratio · Σmask⌋, 1)` of them, chosen uniformly at random (`input.random`, verl uses
 * `torch.randperm`), get `loss = 0` and no gradient. `pg_clipfrac` is the fraction of such tokens.
 *
 * @example
 * ```ts
 * computePolicyLossClipCov(input, 'token-mean', { clip_ratio: 0.2, policy_loss: { loss_mode: 'clip_cov', clip_cov_ratio: 0.0002 } });
 * ```
 */
export function computePolicyLossClipCov(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const { low, high } = resolveClip(config);
  const pl = config.policy_loss ?? {};
  const clipCovRatio = pl.clip_cov_ratio ?? 0.0002;
  const lb = pl.clip_cov_lb ?? 1.0;
  const ub = pl.clip_cov_ub ?? 5.0;
  if (!(clipCovRatio > 0)) throw new RlError('RL_INVALID_CONFIG', 'clip_cov_ratio should be larger than 0.', 'policy_loss.clip_cov_ratio');
  const random = input.random ?? Math.random;

  const l1 = new Float64Array(n);
  const l2 = new Float64Array(n);
  const d = new Float64Array(n);
  let maskSum = 0;
  let klSum = 0;
  for (let k = 0; k < n; k++) {
    const nkl = logProb[k] - oldLogProb[k];
    const ratio = Math.exp(nkl);
    l1[k] = -A[k] * ratio;
    l2[k] = -A[k] * Math.min(1 + high, Math.max(1 - low, ratio));
    const d1 = -A[k] * ratio;
    d[k] = maxGrad(l1[k], l2[k], d1, ratio >= 1 - low && ratio <= 1 + high ? d1 : 0);
    maskSum += mask[k];
    if (mask[k] !== 0) klSum += -nkl * mask[k];
  }
  const meanA = maskedMean(A, mask);
  const meanLp = maskedMean(logProb, mask);
  const candidates: number[] = [];
  for (let k = 0; k < n; k++) {
    if (!(mask[k] > 0) || l2[k] > l1[k]) continue;
    const cov = (A[k] - meanA) * (logProb[k] - meanLp);
    if (cov < ub && cov > lb) candidates.push(k);
  }
  const clipNum = Math.max(Math.trunc(clipCovRatio * maskSum), 1);
  if (candidates.length > clipNum) {
    for (let j = candidates.length - 1; j > 0; j--) {
      const r = Math.floor(random() * (j + 1));
      [candidates[j], candidates[r]] = [candidates[r], candidates[j]];
    }
    candidates.length = clipNum;
  }
  const corr = new Float64Array(n).fill(1);
  for (const k of candidates) corr[k] = 0;

  const pgLosses = new Float64Array(n);
  let cut = 0;
  for (let k = 0; k < n; k++) {
    const w = isw ? isw[k] : 1;
    pgLosses[k] = Math.max(l1[k], l2[k]) * corr[k] * w;
    d[k] *= corr[k] * w;
    if (corr[k] === 0 && mask[k] !== 0) cut += mask[k];
  }
  return finishPolicyLoss(pgLosses, d, input, lossAggMode, config, { maskSum, clipped: cut, klSum });
}
