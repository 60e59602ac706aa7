/**
 * Registry of advantage estimators keyed by verl's `algorithm.adv_estimator` names; users can register
 * their own (verl `register_adv_est` / `get_adv_estimator_fn`).
 */
import { computeGaeAdvantageReturn } from './gae';
import { computeGpgOutcomeAdvantage } from './gpg';
import { computeGrpoOutcomeAdvantage } from './grpo';
import { computeGrpoPasskOutcomeAdvantage } from './grpo-passk';
import { computeGrpoPerStepAdvantage } from './grpo-per-step';
import { computeGrpoVectorizedOutcomeAdvantage } from './grpo-vectorized';
import { computeOpoOutcomeAdvantage } from './opo';
import { computeOptimalTokenBaselineAdvantage } from './optimal-token-baseline';
import { computeReinforcePlusPlusOutcomeAdvantage } from './reinforce-plus-plus';
import { computeReinforcePlusPlusBaselineOutcomeAdvantage } from './reinforce-plus-plus-baseline';
import { computeRemaxOutcomeAdvantage } from './remax';
import { computeRlooOutcomeAdvantage } from './rloo';
import { computeRlooVectorizedOutcomeAdvantage } from './rloo-vectorized';
import { computeTirOptimalTokenBaselineAdvantage } from './tir-optimal-token-baseline';
import type { AdvantageInput, AdvantageOutput } from './types';
import { RlError } from '../errors';

/**
 * The `algorithm` section of a verl config, as far as advantage estimation reads it (snake_case keys, so a
 * verl YAML maps 1:1). Unknown keys are passed through to custom estimators.
 *
 * @example
 * ```ts
 * const algo: AlgoConfig = { adv_estimator: 'grpo', norm_adv_by_std_in_grpo: true };
 * ```
 */
export interface AlgoConfig {
  /** Estimator name, e.g. `grpo`. Default `gae` (verl's default). */
  adv_estimator?: string;
  /** Discount factor (gae, reinforce_plus_plus, grpo_per_step). Default 1. */
  gamma?: number;
  /** GAE λ. Default 1. */
  lam?: number;
  /** Divide by the group std (grpo, grpo_passk, grpo_per_step). Default true. */
  norm_adv_by_std_in_grpo?: boolean;
  /** verl's `epsilon` keyword: added to the group std (GRPO family, default 1e-6) or to the baseline's denominator (optimal token baselines, default 1e-8). */
  epsilon?: number;
  /** GPG divisor. Default 1. */
  f_norm?: number;
  /**
   * Optimal token baseline: zero the baseline of a group's single longest row past the second-longest
   * length. Default false for `optimal_token_baseline`, true for `tir_optimal_token_baseline` (verl's
   * function defaults).
   */
  handle_zero_tail?: boolean;
  /** Anything else a custom estimator wants. */
  [key: string]: unknown;
}

/**
 * An advantage estimator as stored in the registry.
 *
 * @example
 * ```ts
 * const mine: AdvantageEstimatorFn = (input, config) => computeGrpoOutcomeAdvantage(input, { epsilon: Number(config.epsilon ?? 1e-6) });
 * ```
 */
export type AdvantageEstimatorFn = (input: AdvantageInput, config: AlgoConfig) => AdvantageOutput;

const registry = new Map<string, AdvantageEstimatorFn>();

/**
 * Registers an estimator under a name. Re-registering a *different* function under an existing name
 * throws (as verl does) unless `override` is set.
 *
 * @example
 * ```ts
 * registerAdvEstimator('zero', (input) => {
 *   const z = new Float64Array(input.batch * input.seqLen);
 *   return { advantages: z, returns: z };
 * });
 * computeAdvantage(input, { adv_estimator: 'zero' });
 * ```
 */
export function registerAdvEstimator(name: string, fn: AdvantageEstimatorFn, options: { override?: boolean } = {}): void {
  const existing = registry.get(name);
  if (existing && existing !== fn && !options.override) {
    throw new RlError('RL_ALREADY_REGISTERED', `Adv estimator ${name} has already been registered`, name);
  }
  registry.set(name, fn);
}

/**
 * Looks an estimator up by name; throws for unknown names.
 *
 * @example
 * ```ts
 * const grpo = getAdvEstimatorFn('grpo');
 * ```
 */
export function getAdvEstimatorFn(name: string): AdvantageEstimatorFn {
  const fn = registry.get(name);
  if (!fn) throw new RlError('RL_UNKNOWN_NAME', `Unknown advantage estimator: ${name}. Known: ${[...registry.keys()].join(', ')}`, 'adv_estimator');
  return fn;
}

/**
 * Names currently registered.
 *
 * @example
 * ```ts
 * listAdvEstimators(); // ['gae', 'grpo', 'grpo_per_step', ...]
 * ```
 */
export function listAdvEstimators(): string[] {
  return [...registry.keys()];
}

/**
 * Computes advantages with the estimator named by `config.adv_estimator` (default `gae`).
 *
 * @example
 * ```ts
 * const { advantages } = computeAdvantage(
 *   { batch: 2, seqLen: 1, tokenLevelRewards: [1, 0], responseMask: [1, 1], index: ['p', 'p'] },
 *   { adv_estimator: 'grpo', norm_adv_by_std_in_grpo: true });
 * ```
 */
export function computeAdvantage(input: AdvantageInput, config: AlgoConfig = {}): AdvantageOutput {
  return getAdvEstimatorFn(config.adv_estimator ?? 'gae')(input, config);
}

const grpoOpts = (c: AlgoConfig) => ({ epsilon: c.epsilon, normAdvByStdInGrpo: c.norm_adv_by_std_in_grpo });

registerAdvEstimator('gae', (input, c) => computeGaeAdvantageReturn(input, { gamma: c.gamma, lam: c.lam }));
registerAdvEstimator('grpo', (input, c) => computeGrpoOutcomeAdvantage(input, grpoOpts(c)));
registerAdvEstimator('grpo_vectorized', (input, c) => computeGrpoVectorizedOutcomeAdvantage(input, grpoOpts(c)));
registerAdvEstimator('grpo_per_step', (input, c) => computeGrpoPerStepAdvantage(input, { ...grpoOpts(c), gamma: c.gamma }));
registerAdvEstimator('grpo_passk', (input, c) => computeGrpoPasskOutcomeAdvantage(input, grpoOpts(c)));
registerAdvEstimator('rloo', (input) => computeRlooOutcomeAdvantage(input));
registerAdvEstimator('rloo_vectorized', (input) => computeRlooVectorizedOutcomeAdvantage(input));
registerAdvEstimator('opo', (input) => computeOpoOutcomeAdvantage(input));
registerAdvEstimator('gpg', (input, c) => computeGpgOutcomeAdvantage(input, { fNorm: c.f_norm }));
registerAdvEstimator('reinforce_plus_plus', (input, c) => computeReinforcePlusPlusOutcomeAdvantage(input, { gamma: c.gamma }));
registerAdvEstimator('reinforce_plus_plus_baseline', (input) => computeReinforcePlusPlusBaselineOutcomeAdvantage(input));
registerAdvEstimator('remax', (input) => computeRemaxOutcomeAdvantage(input));
registerAdvEstimator('optimal_token_baseline', (input, c) =>
  computeOptimalTokenBaselineAdvantage(input, { handleZeroTail: c.handle_zero_tail ?? false, epsilon: c.epsilon ?? 1e-8 }),
);
registerAdvEstimator('tir_optimal_token_baseline', (input, c) =>
  computeTirOptimalTokenBaselineAdvantage(input, { handleZeroTail: c.handle_zero_tail ?? true, epsilon: c.epsilon ?? 1e-8 }),
);
