/**
 * `adv_estimator: reinforce_plus_plus` — REINFORCE++ (verl `compute_reinforce_plus_plus_outcome_advantage`).
 */
import { maskedWhiten } from '../masked';
import { assertLength, checkShape } from '../shape';
import type { AdvantageInput, AdvantageOutput } from './types';

/**
 * REINFORCE++ options.
 *
 * @example
 * ```ts
 * const opts: ReinforcePlusPlusOptions = { gamma: 0.99 };
 * ```
 */
export interface ReinforcePlusPlusOptions {
  /** Discount factor (verl `algorithm.gamma`). Default 1. */
  gamma?: number;
}

/**
 * REINFORCE++ (arXiv 2501.03262): discounted returns `R_t = r_t + γ · R_{t+1}` scanned backwards, where the
 * running return is reset to 0 *after* each masked token (verl multiplies it by the mask once stored, so a
 * hole in a multi-turn response cuts credit from later turns); advantages are the returns whitened over
 * all unmasked tokens of the batch, times the mask. `returns` are the raw discounted returns.
 *
 * @example
 * ```ts
 * computeReinforcePlusPlusOutcomeAdvantage(
 *   { batch: 2, seqLen: 2, tokenLevelRewards: [0, 1, 0, 0], responseMask: [1, 1, 1, 1] }, { gamma: 1 });
 * ```
 */
export function computeReinforcePlusPlusOutcomeAdvantage(input: AdvantageInput, options: ReinforcePlusPlusOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, tokenLevelRewards: r, responseMask: m } = input;
  assertLength('tokenLevelRewards', r, n);
  assertLength('responseMask', m, n);
  const gamma = options.gamma ?? 1;
  const returns = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    let running = 0;
    for (let t = seqLen - 1; t >= 0; t--) {
      const k = i * seqLen + t;
      running = r[k] + gamma * running;
      returns[k] = running;
      running *= m[k];
    }
  }
  const advantages = maskedWhiten(returns, m);
  for (let k = 0; k < n; k++) advantages[k] = m[k] === 0 ? 0 : advantages[k] * m[k];
  return { advantages, returns };
}
