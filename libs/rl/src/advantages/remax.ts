/**
 * `adv_estimator: remax` — ReMax (verl `compute_remax_outcome_advantage`).
 */
import { assertLength, checkShape } from '../shape';
import type { AdvantageInput, AdvantageOutput } from './types';
import { RlError } from '../errors';

/**
 * ReMax (arXiv 2310.10505): returns are reverse cumulative sums of the masked rewards
 * (`R_t = Σ_{s ≥ t} r_s · mask_s`) and `advantages = returns - rewardBaselines[i] · mask`, where
 * `rewardBaselines` is the reward of the greedy response to the same prompt. Note that, as in verl,
 * masked positions keep their return (no final masking).
 *
 * Needs `tokenLevelRewards`, `responseMask`, `rewardBaselines` (length `batch`).
 *
 * @example
 * ```ts
 * computeRemaxOutcomeAdvantage({ batch: 1, seqLen: 2, tokenLevelRewards: [0, 1], responseMask: [1, 1], rewardBaselines: [0.4] });
 * // returns [1, 1], advantages [0.6, 0.6]
 * ```
 */
export function computeRemaxOutcomeAdvantage(input: AdvantageInput): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, tokenLevelRewards: r, responseMask: m, rewardBaselines } = input;
  assertLength('tokenLevelRewards', r, n);
  assertLength('responseMask', m, n);
  if (rewardBaselines == null) throw new RlError('RL_INVALID_INPUT', 'remax needs rewardBaselines', 'rewardBaselines');
  assertLength('rewardBaselines', rewardBaselines, batch);
  const returns = new Float64Array(n);
  const advantages = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    let acc = 0;
    for (let t = seqLen - 1; t >= 0; t--) {
      const k = i * seqLen + t;
      if (m[k] !== 0) acc += r[k] * m[k];
      returns[k] = acc;
      advantages[k] = acc - (m[k] === 0 ? 0 : rewardBaselines[i] * m[k]);
    }
  }
  return { advantages, returns };
}
