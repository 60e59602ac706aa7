/**
 * KL estimators between the policy and a reference policy, per token (verl `kl_penalty` /
 * `actor.kl_loss_type` / `algorithm.kl_penalty`), the KL loss of the actor (`use_kl_loss`), and the KL
 * penalty folded into rewards (`use_kl_in_reward`, verl `apply_kl_penalty`).
 *
 * With `x = logProb - refLogProb` (see http://joschu.net/blog/kl-approx.html), verl's names:
 * - `kl` / `k1`: `x`
 * - `abs`: `|x|`
 * - `mse` / `k2`: `x² / 2`
 * - `low_var_kl` / `k3`: `exp(-x) + x - 1`, with `-x` clamped to `[-20, 20]` first and the result clamped
 *   to `[-10, 10]` (verl's clamps)
 * - `full` and every name with a trailing `+` (`k1+`, `k3+`, `low_var_kl+`, `abs+`, `k2+`, ...) raise
 *   `RL_NOT_IMPLEMENTED`, as verl raises `NotImplementedError` for them at the commit this package follows
 *   (the `+` is passed on to `kl_penalty_forward`, where no branch matches it).
 *
 * OpenTinker extension, under names verl does not use: `k1_st`, `kl_st`, `abs_st`, `k3_st` and
 * `low_var_kl_st` are straight-through estimators: the forward value of the base estimator with the
 * gradient of `k2` (`x`). This is what verl's `+` names appear to intend.
 */
import { aggLoss, type AggOptions, type LossAggMode } from './aggregation';
import { RlError } from './errors';
import { maskedMeanRows } from './masked';
import { assertLength, checkShape, type BatchShape, type NumArray } from './shape';

/**
 * Base KL estimator names accepted by verl.
 *
 * @example
 * ```ts
 * const k: KlEstimator = 'low_var_kl';
 * ```
 */
export type KlEstimator = 'kl' | 'k1' | 'abs' | 'mse' | 'k2' | 'low_var_kl' | 'k3';

/**
 * OpenTinker's straight-through KL estimators (not verl names): the value of the base estimator, the
 * gradient of `k2`.
 *
 * @example
 * ```ts
 * const t: KlStraightThroughType = 'k3_st'; // k3 value, k2 gradient
 * ```
 */
export type KlStraightThroughType = 'kl_st' | 'k1_st' | 'abs_st' | 'low_var_kl_st' | 'k3_st';

/**
 * A `kl_loss_type` / `kl_penalty` value this package computes: one of verl's estimators or an OpenTinker
 * straight-through one.
 *
 * @example
 * ```ts
 * const t: KlPenaltyType = 'low_var_kl';
 * ```
 */
export type KlPenaltyType = KlEstimator | KlStraightThroughType;

/**
 * verl's KL estimator names, in verl's order.
 *
 * @example
 * ```ts
 * KL_ESTIMATORS.includes('k3'); // true
 * ```
 */
export const KL_ESTIMATORS: readonly KlEstimator[] = ['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3'];

/**
 * OpenTinker's straight-through estimators (see {@link KlStraightThroughType}).
 *
 * @example
 * ```ts
 * KL_STRAIGHT_THROUGH_TYPES.includes('k3_st'); // true
 * ```
 */
export const KL_STRAIGHT_THROUGH_TYPES: readonly KlStraightThroughType[] = ['kl_st', 'k1_st', 'abs_st', 'low_var_kl_st', 'k3_st'];

/**
 * Splits a `kl_penalty` name into its base estimator and whether the straight-through gradient applies.
 * Throws `RL_NOT_IMPLEMENTED` where verl raises `NotImplementedError` (`full`, any name ending in `+`)
 * and `RL_UNKNOWN_NAME` for names verl has never had.
 *
 * @example
 * ```ts
 * parseKlPenalty('k3_st'); // { base: 'k3', straightThrough: true }
 * parseKlPenalty('k3+');   // throws RlError RL_NOT_IMPLEMENTED
 * ```
 */
export function parseKlPenalty(type: string): { base: KlEstimator; straightThrough: boolean } {
  if ((KL_ESTIMATORS as readonly string[]).includes(type)) return { base: type as KlEstimator, straightThrough: false };
  if ((KL_STRAIGHT_THROUGH_TYPES as readonly string[]).includes(type)) {
    return { base: type.slice(0, -3) as KlEstimator, straightThrough: true };
  }
  if (type === 'full' || type.endsWith('+')) {
    const hint =
      type.endsWith('+') && KL_STRAIGHT_THROUGH_TYPES.includes(`${type.slice(0, -1)}_st` as KlStraightThroughType)
        ? ` (the straight-through estimator is ${type.slice(0, -1)}_st)`
        : '';
    throw new RlError('RL_NOT_IMPLEMENTED', `kl_penalty ${type} is not implemented: verl raises NotImplementedError for it${hint}`, 'kl_penalty');
  }
  throw new RlError('RL_UNKNOWN_NAME', `Unknown kl_penalty: ${type}. Known: ${[...KL_ESTIMATORS, ...KL_STRAIGHT_THROUGH_TYPES].join(', ')}`, 'kl_penalty');
}

function forward(base: KlEstimator, lp: number, ref: number): number {
  switch (base) {
    case 'kl':
    case 'k1':
      return lp - ref;
    case 'abs':
      return Math.abs(lp - ref);
    case 'mse':
    case 'k2': {
      const d = lp - ref;
      return 0.5 * d * d;
    }
    case 'low_var_kl':
    case 'k3': {
      const kl = Math.min(20, Math.max(-20, ref - lp));
      const kld = Math.exp(kl) - kl - 1;
      return Math.min(10, Math.max(-10, kld));
    }
  }
}

function derivative(base: KlEstimator, lp: number, ref: number): number {
  switch (base) {
    case 'kl':
    case 'k1':
      return 1;
    case 'abs':
      return Math.sign(lp - ref);
    case 'mse':
    case 'k2':
      return lp - ref;
    case 'low_var_kl':
    case 'k3': {
      // torch.clamp passes the gradient on the closed interval, blocks it outside.
      const raw = ref - lp;
      if (raw < -20 || raw > 20) return 0;
      const kld = Math.exp(raw) - raw - 1;
      if (kld < -10 || kld > 10) return 0;
      return 1 - Math.exp(raw);
    }
  }
}

/**
 * Per-token KL estimate (verl `kl_penalty`), element-wise over any shape.
 *
 * @example
 * ```ts
 * klPenalty([-1, -2], [-1.5, -2], 'low_var_kl'); // [exp(-0.5) + 0.5 - 1, 0]
 * ```
 */
export function klPenalty(logProb: NumArray, refLogProb: NumArray, type: KlPenaltyType | string): Float64Array {
  assertLength('refLogProb', refLogProb, logProb.length);
  const { base } = parseKlPenalty(type);
  const out = new Float64Array(logProb.length);
  for (let k = 0; k < out.length; k++) out[k] = forward(base, logProb[k], refLogProb[k]);
  return out;
}

/**
 * Element-wise `d kl_penalty / d logProb` with torch's conventions (gradient blocked outside clamps,
 * `sign(0) = 0` for `abs`); for the `_st` types the `k2` gradient `logProb - refLogProb`.
 *
 * @example
 * ```ts
 * klPenaltyGrad([-1], [-1.5], 'k3_st'); // [0.5]
 * ```
 */
export function klPenaltyGrad(logProb: NumArray, refLogProb: NumArray, type: KlPenaltyType | string): Float64Array {
  assertLength('refLogProb', refLogProb, logProb.length);
  const { base, straightThrough } = parseKlPenalty(type);
  const out = new Float64Array(logProb.length);
  for (let k = 0; k < out.length; k++) {
    out[k] = straightThrough ? logProb[k] - refLogProb[k] : derivative(base, logProb[k], refLogProb[k]);
  }
  return out;
}

/**
 * Input of {@link klLoss}.
 *
 * @example
 * ```ts
 * const input: KlLossInput = { batch: 1, seqLen: 2, logProb: [-1, -2], refLogProb: [-1.1, -2], responseMask: [1, 1] };
 * ```
 */
export interface KlLossInput extends BatchShape {
  /** Current policy log-probs `[batch, seqLen]`. */
  logProb: NumArray;
  /** Reference policy log-probs `[batch, seqLen]`. */
  refLogProb: NumArray;
  /** Response mask `[batch, seqLen]`. */
  responseMask: NumArray;
}

/**
 * Result of {@link klLoss}.
 *
 * @example
 * ```ts
 * const { loss, dLogProb }: KlLossOutput = klLoss(input, 'low_var_kl');
 * ```
 */
export interface KlLossOutput {
  /** Aggregated KL loss (not yet multiplied by `kl_loss_coef`). */
  loss: number;
  /** Per-token KL estimates. */
  kl: Float64Array;
  /** `d loss / d logProb` per token. */
  dLogProb: Float64Array;
  /** verl metric names: `actor/kl_loss`. */
  metrics: { 'actor/kl_loss': number };
}

/**
 * Actor KL loss (verl `use_kl_loss`): `agg_loss(kl_penalty(logProb, refLogProb, klLossType), mask, mode)`.
 * Multiply `loss` and `dLogProb` by `kl_loss_coef` before adding them to the policy loss.
 *
 * @example
 * ```ts
 * const r = klLoss({ batch: 1, seqLen: 2, logProb: [-1, -2], refLogProb: [-1.2, -2], responseMask: [1, 1] }, 'low_var_kl');
 * r.loss; r.dLogProb; // scalar, per-token coefficients
 * ```
 */
export function klLoss(input: KlLossInput, klLossType: KlPenaltyType | string = 'low_var_kl', lossAggMode: LossAggMode = 'token-mean', aggOptions: AggOptions = {}): KlLossOutput {
  const n = checkShape(input);
  assertLength('logProb', input.logProb, n);
  assertLength('responseMask', input.responseMask, n);
  const kl = klPenalty(input.logProb, input.refLogProb, klLossType);
  const { loss, weights } = aggLoss(kl, input.responseMask, input, lossAggMode, aggOptions);
  const g = klPenaltyGrad(input.logProb, input.refLogProb, klLossType);
  const dLogProb = new Float64Array(n);
  for (let k = 0; k < n; k++) dLogProb[k] = weights[k] === 0 ? 0 : weights[k] * g[k];
  return { loss, kl, dLogProb, metrics: { 'actor/kl_loss': loss } };
}

/**
 * Input of {@link applyKlPenalty}.
 *
 * @example
 * ```ts
 * const input: ApplyKlPenaltyInput = {
 *   batch: 1, seqLen: 2, tokenLevelScores: [0, 1], oldLogProb: [-1, -1], refLogProb: [-1.2, -0.8], responseMask: [1, 1],
 * };
 * ```
 */
export interface ApplyKlPenaltyInput extends BatchShape {
  /** Token-level scores from the reward function `[batch, seqLen]`. */
  tokenLevelScores: NumArray;
  /** Log-probs of the rollout policy (verl `old_log_probs`). */
  oldLogProb: NumArray;
  /** Reference policy log-probs. */
  refLogProb: NumArray;
  /** Response mask. */
  responseMask: NumArray;
}

/**
 * Result of {@link applyKlPenalty}.
 *
 * @example
 * ```ts
 * const { tokenLevelRewards, currentKl }: ApplyKlPenaltyOutput = applyKlPenalty(input, 0.001, 'kl');
 * ```
 */
export interface ApplyKlPenaltyOutput {
  /** `tokenLevelScores - klCoef * kl * mask`. */
  tokenLevelRewards: Float64Array;
  /** Batch mean of the per-sequence masked-mean KL (feed it to {@link updateKlCoef}). */
  currentKl: number;
  /** verl metric names. */
  metrics: { 'actor/reward_kl_penalty': number; 'actor/reward_kl_penalty_coeff': number };
}

/**
 * KL penalty in the reward (verl `apply_kl_penalty`, `algorithm.use_kl_in_reward`):
 * `rewards = scores - klCoef · kl_penalty(old, ref) · mask` and `current_kl = mean_i masked_mean_t(kl)`.
 *
 * @example
 * ```ts
 * const { tokenLevelRewards, currentKl } = applyKlPenalty(
 *   { batch: 1, seqLen: 2, tokenLevelScores: [0, 1], oldLogProb: [-1, -1], refLogProb: [-1.1, -0.9], responseMask: [1, 1] },
 *   0.001, 'kl');
 * ```
 */
export function applyKlPenalty(input: ApplyKlPenaltyInput, klCoef: number, klPenaltyType: KlPenaltyType | string = 'kl'): ApplyKlPenaltyOutput {
  const n = checkShape(input);
  const { batch, seqLen } = input;
  assertLength('tokenLevelScores', input.tokenLevelScores, n);
  assertLength('oldLogProb', input.oldLogProb, n);
  assertLength('responseMask', input.responseMask, n);
  const kl = klPenalty(input.oldLogProb, input.refLogProb, klPenaltyType);
  const kld = new Float64Array(n);
  const tokenLevelRewards = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    kld[k] = input.responseMask[k] === 0 ? 0 : kl[k] * input.responseMask[k];
    tokenLevelRewards[k] = input.tokenLevelScores[k] - klCoef * kld[k];
  }
  const perSeq = maskedMeanRows(kld, input.responseMask, batch, seqLen);
  let currentKl = 0;
  for (let i = 0; i < batch; i++) currentKl += perSeq[i];
  currentKl = batch > 0 ? currentKl / batch : 0;
  return {
    tokenLevelRewards,
    currentKl,
    metrics: { 'actor/reward_kl_penalty': currentKl, 'actor/reward_kl_penalty_coeff': klCoef },
  };
}

/**
 * verl `algorithm.kl_ctrl` settings.
 *
 * @example
 * ```ts
 * const ctrl: KlCtrlConfig = { type: 'adaptive', kl_coef: 0.001, target_kl: 0.1, horizon: 10000 };
 * ```
 */
export interface KlCtrlConfig {
  /** `fixed` keeps `kl_coef`; `adaptive` follows Ziegler et al. (2019). */
  type: 'fixed' | 'adaptive';
  /** Initial coefficient. */
  kl_coef: number;
  /** Target KL (adaptive). */
  target_kl?: number;
  /** Horizon (adaptive, > 0). */
  horizon?: number;
}

/**
 * One update of verl's KL controller (`FixedKLController` / `AdaptiveKLController.update`), as a pure
 * function: returns the next coefficient. Adaptive: `value · (1 + clip(kl/target - 1, ±0.2) · nSteps/horizon)`.
 *
 * @example
 * ```ts
 * updateKlCoef({ type: 'adaptive', kl_coef: 0.05, target_kl: 0.1, horizon: 10000 }, 0.05, 0.2, 64);
 * // 0.05 * (1 + 0.2 * 64 / 10000)
 * ```
 */
export function updateKlCoef(config: KlCtrlConfig, value: number, currentKl: number, nSteps: number): number {
  if (config.type === 'fixed') return value;
  if (config.type !== 'adaptive') throw new RlError('RL_UNKNOWN_NAME', `Unknown kl_ctrl.type: ${String(config.type)}`, 'kl_ctrl.type');
  const target = config.target_kl;
  const horizon = config.horizon;
  if (target === undefined || horizon === undefined) throw new RlError('RL_INVALID_CONFIG', 'adaptive kl_ctrl needs target_kl and horizon', 'kl_ctrl');
  if (!(horizon > 0)) throw new RlError('RL_INVALID_CONFIG', `horizon must be larger than 0. Got ${horizon}`, 'kl_ctrl.horizon');
  const err = Math.min(0.2, Math.max(-0.2, currentKl / target - 1));
  return value * (1 + (err * nSteps) / horizon);
}
