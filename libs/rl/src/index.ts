/**
 * `@opentinker/rl` — verl-compatible RL algorithms as pure functions on typed arrays.
 *
 * Matrices are flat row-major `[batch, seqLen]` arrays with a response mask; every loss returns its value
 * and the per-token coefficients `d loss / d logProb` the engine back-propagates through log-probs.
 * Names follow verl's configuration keys (`adv_estimator`, `policy_loss.loss_mode`, `loss_agg_mode`,
 * `kl_loss_type`).
 */
export * from './errors';
export * from './shape';
export * from './masked';
export * from './aggregation';
export * from './kl';
export * from './kl-controller';
export * from './compute-rewards';
export * from './sum-pi-squared';
export * from './metrics';
export * from './dynamic-sampling';
export * from './overlong-reward';

export * from './advantages/types';
export * from './advantages/groups';
export * from './advantages/gae';
export * from './advantages/grpo';
export * from './advantages/grpo-vectorized';
export * from './advantages/grpo-per-step';
export * from './advantages/grpo-passk';
export * from './advantages/rloo';
export * from './advantages/rloo-vectorized';
export * from './advantages/opo';
export * from './advantages/gpg';
export * from './advantages/reinforce-plus-plus';
export * from './advantages/reinforce-plus-plus-baseline';
export * from './advantages/remax';
export * from './advantages/optimal-token-baseline';
export * from './advantages/tir-optimal-token-baseline';
export * from './advantages/registry';

export * from './losses/types';
export * from './losses/policy-loss';
export * from './losses/gspo';
export * from './losses/sapo';
export * from './losses/reinforce';
export * from './losses/cispo';
export * from './losses/gpg';
export * from './losses/clip-cov';
export * from './losses/kl-cov';
export * from './losses/geo-mean';
export * from './losses/registry';
export * from './losses/value-loss';
export * from './losses/entropy';
export * from './losses/sft';
export * from './losses/tinker';
