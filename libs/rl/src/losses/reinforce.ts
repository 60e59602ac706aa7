/**
 * REINFORCE policy-gradient loss with optional importance weights (verl `compute_policy_loss_reinforce`,
 * which verl reaches through `bypass_mode` with `rollout_correction.loss_type: reinforce`; registered here
 * as `loss_mode: reinforce`).
 */
import type { LossAggMode } from '../aggregation';
import { checkPolicyInput, finishPolicyLoss } from './policy-loss';
import type { ActorConfig, PolicyLossInput, PolicyLossOutput } from './types';

/**
 * REINFORCE: `loss_t = −A·logProb` (times rollout IS weights, taken as constants), aggregated by
 * `lossAggMode`; no ratio and no clipping, `dLogProb = −A·ρ_w` times the aggregation weight.
 * `oldLogProb` plays verl's `rollout_log_prob`: it is read only for the metric
 * `ppo_kl = masked_mean(oldLogProb − logProb)` (not clamped), the one metric verl reports.
 *
 * @example
 * ```ts
 * computePolicyLossReinforce(
 *   { batch: 1, seqLen: 2, oldLogProb: [-1, -2], logProb: [-1, -2], advantages: [1, 1], responseMask: [1, 1] });
 * // loss = 1.5, dLogProb = [-0.5, -0.5]
 * ```
 */
export function computePolicyLossReinforce(input: PolicyLossInput, lossAggMode: LossAggMode = 'token-mean', config: ActorConfig = {}): PolicyLossOutput {
  const n = checkPolicyInput(input);
  const { oldLogProb, logProb, advantages: A, responseMask: mask, rolloutIsWeights: isw } = input;
  const pgLosses = new Float64Array(n);
  const dToken = new Float64Array(n);
  let maskSum = 0;
  let klSum = 0;
  for (let k = 0; k < n; k++) {
    const w = isw ? isw[k] : 1;
    pgLosses[k] = -A[k] * logProb[k] * w;
    dToken[k] = -A[k] * w;
    const m = mask[k];
    maskSum += m;
    if (m !== 0) klSum += (oldLogProb[k] - logProb[k]) * m;
  }
  return finishPolicyLoss(pgLosses, dToken, input, lossAggMode, config, { maskSum, klSum });
}
