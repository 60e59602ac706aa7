/**
 * `policy_loss.loss_mode: gpg` — Group Policy Gradient loss (verl `compute_policy_loss_gpg`).
 */
import { aggLoss, type LossAggMode } from '../aggregation';
import { checkPolicyInput } from './policy-loss';
import { aggOptionsFromConfig, type ActorConfig, type PolicyLossInput, type PolicyLossOutput } from './types';

/**
 * GPG (arXiv 2504.02546): plain policy gradient without ratio or clipping,
 * `loss_t = -logProb · A` (times rollout IS weights), aggregated by `lossAggMode`; `dLogProb = -A · W`.
 * No metrics (verl returns an empty dict).
 *
 * @example
 * ```ts
 * computePolicyLossGpg({ batch: 1, seqLen: 2, oldLogProb: [0, 0], logProb: [-1, -2], advantages: [1, 1], responseMask: [1, 1] });
 * // loss = 1.5, dLogProb = [-0.5, -0.5]
 * ```
 */
export function computePolicyLossGpg(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const pgLosses = new Float64Array(n);
  for (let k = 0; k < n; k++) pgLosses[k] = -logProb[k] * A[k] * (isw ? isw[k] : 1);
  const { loss, weights } = aggLoss(pgLosses, mask, input, lossAggMode, aggOptionsFromConfig(config));
  const dLogProb = new Float64Array(n);
  for (let k = 0; k < n; k++) dLogProb[k] = weights[k] === 0 ? 0 : -weights[k] * A[k] * (isw ? isw[k] : 1);
  return {
    loss,
    dLogProb,
    pgLosses,
    metrics: {},
  };
}
