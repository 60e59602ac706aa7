/**
 * Shared types of the policy losses: inputs, outputs and the verl actor config keys they read.
 */
import type { AggOptions, LossAggMode } from '../aggregation';
import type { BatchShape, NumArray } from '../shape';

/**
 * Inputs of a policy loss; all matrices `[batch, seqLen]`.
 *
 * @example
 * ```ts
 * const input: PolicyLossInput = {
 *   batch: 1, seqLen: 2,
 *   oldLogProb: new Float32Array([-1, -2]), logProb: new Float32Array([-0.9, -2.2]),
 *   advantages: [0.5, 0.5], responseMask: [1, 1],
 * };
 * ```
 */
export interface PolicyLossInput extends BatchShape {
  /** Log-probs of the sampled tokens under the policy that generated them (verl `old_log_prob`). */
  oldLogProb: NumArray;
  /** Log-probs under the current policy (verl `log_prob`); the gradient is taken with respect to these. */
  logProb: NumArray;
  /** Per-token advantages. */
  advantages: NumArray;
  /** Response mask. */
  responseMask: NumArray;
  /** Optional per-token rollout importance-sampling weights (verl `rollout_is_weights`), treated as constants. */
  rolloutIsWeights?: NumArray;
  /** Random source in [0, 1) for `clip_cov`'s random token subset (verl `torch.randperm`). Default `Math.random`. */
  random?: () => number;
}

/**
 * verl `actor.policy_loss` sub-config.
 *
 * @example
 * ```ts
 * const pl: PolicyLossConfig = { loss_mode: 'kl_cov', kl_cov_ratio: 0.0002, ppo_kl_coef: 1 };
 * ```
 */
export interface PolicyLossConfig {
  /** Loss mode: `vanilla`, `gspo`, `sapo`, `cispo`, `gpg`, `clip_cov`, `kl_cov`, `geo_mean`, `reinforce` or a registered name. */
  loss_mode?: string;
  /** clip_cov: fraction of tokens whose gradient may be detached. Default 0.0002. */
  clip_cov_ratio?: number;
  /** clip_cov: lower covariance bound. Default 1. */
  clip_cov_lb?: number;
  /** clip_cov: upper covariance bound. Default 5. */
  clip_cov_ub?: number;
  /** kl_cov: fraction of tokens that get the KL penalty. Default 0.0002. */
  kl_cov_ratio?: number;
  /** kl_cov: coefficient of the |log-ratio| penalty. Default 1. */
  ppo_kl_coef?: number;
}

/**
 * The verl `actor` config keys read by the policy losses (snake_case, as in verl YAML).
 *
 * @example
 * ```ts
 * const actor: ActorConfig = {
 *   clip_ratio_low: 0.2, clip_ratio_high: 0.28, clip_ratio_c: 3,
 *   loss_agg_mode: 'token-mean', policy_loss: { loss_mode: 'vanilla' },
 * };
 * ```
 */
export interface ActorConfig {
  /** Symmetric PPO clip ε. Default 0.2. */
  clip_ratio?: number;
  /** Lower clip ε (ratio ≥ 1 - low); defaults to `clip_ratio`. */
  clip_ratio_low?: number | null;
  /** Upper clip ε (ratio ≤ 1 + high, "clip-higher"); defaults to `clip_ratio`. */
  clip_ratio_high?: number | null;
  /** Dual-clip constant c > 1, applied to negative advantages. Default 3. */
  clip_ratio_c?: number;
  /** SAPO gate temperature for tokens with a positive advantage. Default 1 (verl's default). */
  tau_pos?: number;
  /** SAPO gate temperature for tokens with a zero or negative advantage. Default 1.05 (verl's default). */
  tau_neg?: number;
  /** Aggregation mode. Default `token-mean`. */
  loss_agg_mode?: LossAggMode;
  /** Policy loss selection and its parameters. */
  policy_loss?: PolicyLossConfig;
  /** Global normalisers for {@link AggOptions} (verl `global_batch_info`, snake_case). */
  global_batch_info?: { dp_size?: number; batch_num_tokens?: number; global_batch_size?: number; loss_scale_factor?: number };
  /** Anything else a custom loss wants. */
  [key: string]: unknown;
}

/**
 * verl's policy-loss metrics. Each mode reports exactly the keys verl's function returns: `gpg` none,
 * `kl_cov` and `reinforce` only `actor/ppo_kl`, `clip_cov` no `actor/pg_clipfrac_lower`, the others all
 * three (some as constant 0, as verl does "for compatibility").
 *
 * @example
 * ```ts
 * const m: PolicyLossMetrics = computePolicyLoss(input, actor).metrics;
 * m['actor/pg_clipfrac'] ?? 0;
 * ```
 */
export interface PolicyLossMetrics {
  /** Fraction of unmasked tokens whose loss was clipped (meaning depends on the mode). */
  'actor/pg_clipfrac'?: number;
  /** Approximate KL `masked_mean(old_log_prob - log_prob)` (kl_cov: mean |log-ratio|). */
  'actor/ppo_kl'?: number;
  /** Fraction of unmasked tokens hit by the dual clip (vanilla) or clipped below (geo_mean). */
  'actor/pg_clipfrac_lower'?: number;
}

/**
 * Output of a policy loss.
 *
 * @example
 * ```ts
 * const { loss, dLogProb }: PolicyLossOutput = computePolicyLoss(input, actor);
 * // engine: backprop Σ dLogProb[i,t] · logProb[i,t] through the model
 * ```
 */
export interface PolicyLossOutput {
  /** Aggregated scalar loss (to minimise). */
  loss: number;
  /**
   * `d loss / d logProb[i,t]`, with verl's stop-gradients respected — this is what the engine
   * back-propagates through the log-probs (`loss_total = Σ dLogProb · logProb` has the same gradient).
   */
  dLogProb: Float64Array;
  /** Per-token loss matrix before aggregation (after rollout IS weights), when the mode has one. */
  pgLosses?: Float64Array;
  /** verl metrics. */
  metrics: PolicyLossMetrics;
}

/**
 * A policy loss as stored in the registry.
 *
 * @example
 * ```ts
 * const reinforce: PolicyLossFn = (input, mode, config) => computePolicyLossGpg(input, mode, config);
 * ```
 */
export type PolicyLossFn = (input: PolicyLossInput, lossAggMode: LossAggMode, config: ActorConfig) => PolicyLossOutput;

/**
 * Resolved clip parameters: `clip_ratio_low/high` fall back to `clip_ratio` (default 0.2), `clip_ratio_c`
 * defaults to 3.
 *
 * @example
 * ```ts
 * resolveClip({ clip_ratio: 0.2, clip_ratio_high: 0.28 }); // { low: 0.2, high: 0.28, c: 3 }
 * ```
 */
export function resolveClip(config: ActorConfig): { low: number; high: number; c: number } {
  const base = config.clip_ratio ?? 0.2;
  return {
    low: config.clip_ratio_low ?? base,
    high: config.clip_ratio_high ?? base,
    c: config.clip_ratio_c ?? 3.0,
  };
}

/**
 * {@link AggOptions} from an actor config's `global_batch_info`.
 *
 * @example
 * ```ts
 * aggOptionsFromConfig({ global_batch_info: { dp_size: 2 } }); // { dpSize: 2, ... }
 * ```
 */
export function aggOptionsFromConfig(config: ActorConfig): AggOptions {
  const g = config.global_batch_info ?? {};
  return {
    dpSize: g.dp_size,
    batchNumTokens: g.batch_num_tokens,
    globalBatchSize: g.global_batch_size,
    lossScaleFactor: g.loss_scale_factor,
  };
}

/**
 * Gradient of `torch.maximum(a, b)` given the partials of `a` and `b`: the larger one's, split evenly on a
 * tie (torch's convention).
 *
 * @example
 * ```ts
 * maxGrad(1, 1, 2, 4); // 3
 * ```
 */
export function maxGrad(a: number, b: number, da: number, db: number): number {
  if (a > b) return da;
  if (b > a) return db;
  return 0.5 * (da + db);
}

/**
 * Gradient of `torch.minimum(a, b)` given the partials, split evenly on a tie.
 *
 * @example
 * ```ts
 * minGrad(0, 1, 2, 4); // 2
 * ```
 */
export function minGrad(a: number, b: number, da: number, db: number): number {
  if (a < b) return da;
  if (b < a) return db;
  return 0.5 * (da + db);
}
