/**
 * Shared input/output types of the advantage estimators (verl `compute_advantage` arguments).
 */
import type { BatchShape, NumArray, Uid } from '../shape';

/**
 * Everything an advantage estimator may read. Matrices are `[batch, seqLen]` row-major; each estimator
 * documents which fields it needs.
 *
 * @example
 * ```ts
 * const input: AdvantageInput = {
 *   batch: 2, seqLen: 3,
 *   tokenLevelRewards: new Float32Array([0, 0, 1, 0, 0, 0]),
 *   responseMask: new Float32Array([1, 1, 1, 1, 1, 0]),
 *   index: ['prompt-7', 'prompt-7'],
 * };
 * ```
 */
export interface AdvantageInput extends BatchShape {
  /** Per-token rewards (verl `token_level_rewards`); outcome rewards sit on the last response token. */
  tokenLevelRewards: NumArray;
  /** 1 on response tokens the policy generated, 0 on padding and (multi-turn) environment tokens. */
  responseMask: NumArray;
  /** Group id per row (verl `index` / `uid`): rows with the same id answer the same prompt. */
  index?: ArrayLike<Uid>;
  /** Critic values per token (`gae`). */
  values?: NumArray;
  /** Per-row reward of the greedy baseline response (`remax`, verl `reward_baselines`). */
  rewardBaselines?: NumArray;
  /** Per-row list of per-turn rewards (`grpo_per_step`, OpenTinker `turn_scores`). */
  turnScores?: ReadonlyArray<ArrayLike<number> | null | undefined>;
  /** Log-probs of the sampled tokens under the rollout policy (`optimal_token_baseline`, verl `old_log_probs`). */
  oldLogProbs?: NumArray;
  /**
   * `Σ_v π(v)²` of the distribution each token was drawn from (`optimal_token_baseline`, verl
   * `sum_pi_squared`; see {@link sumPiSquaredFromLogits}).
   */
  sumPiSquared?: NumArray;
  /** Rollout importance-sampling weights per token (`optimal_token_baseline`, verl `rollout_is_weights`); optional. */
  rolloutIsWeights?: NumArray;
}

/**
 * Advantages and returns, both `[batch, seqLen]`.
 *
 * @example
 * ```ts
 * const { advantages, returns }: AdvantageOutput = computeAdvantage(input, { adv_estimator: 'grpo' });
 * ```
 */
export interface AdvantageOutput {
  /** Per-token advantages. */
  advantages: Float64Array;
  /** Per-token returns (the value-function target for `gae`; equal to `advantages` for outcome estimators). */
  returns: Float64Array;
}
