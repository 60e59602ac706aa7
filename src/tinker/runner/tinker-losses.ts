import { userError, type TinkerLoss } from '../../jobs/kinds/tinker/tinker-ops';

/**
 * Tinker's built-in losses as per-token coefficients on log-probs, with the SDK's semantics: the loss
 * is a sum over tokens and datums (never a mean), each token's term given by the datum's loss inputs
 * (aligned with its input tokens) and the current log-prob `π` of its target token. The engine's trainer
 * back-propagates `Σ coef·π`, so `coef = ∂loss/∂π` per token. `r = exp(π − q)` with `q` the sampler's
 * log-prob (`logprobs`) and `A` the advantage.
 *
 * | loss | inputs | per token |
 * | --- | --- | --- |
 * | `cross_entropy` | `target_tokens`, `weights` (default 1) | `−w·π` |
 * | `importance_sampling` | `target_tokens`, `logprobs`, `advantages` | `−r·A` |
 * | `ppo` | the same; config `clip_low_threshold` (0.8), `clip_high_threshold` (1.2) | `−min(r·A, clip(r, lo, hi)·A)` |
 * | `cispo` | the same; the same config (0.8, 1.2) | `−sg(clip(r, lo, hi))·A·π` |
 */

/** One datum's per-token loss terms and their derivatives. */
export interface TokenLoss {
  /** `∂loss/∂π` per token. */
  coef: Float32Array;
  /** The loss term per token (`elementwise_loss`). */
  loss: Float32Array;
}

function numberConfig(config: Record<string, number | string>, key: string, fallback: number): number {
  const v = config[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw userError(`loss_fn_config.${key} must be a number, got ${JSON.stringify(v)}`);
  return v;
}

/** A loss of `lossFn` over one datum, as a function of the current log-probs of its targets. */
export function tokenLoss(lossFn: TinkerLoss, config: Record<string, number | string>, inputs: Record<string, number[]>): (logprobs: Float32Array) => TokenLoss {
  const n = inputs.target_tokens.length;
  const weights = inputs.weights;
  const q = inputs.logprobs;
  const adv = inputs.advantages;
  const lo = numberConfig(config, 'clip_low_threshold', 0.8);
  const hi = numberConfig(config, 'clip_high_threshold', 1.2);
  if (lossFn !== 'cross_entropy' && lossFn !== 'importance_sampling' && !(lo <= hi)) {
    throw userError(`loss_fn_config: clip_low_threshold ${lo} is above clip_high_threshold ${hi}`);
  }
  return (pi) => {
    const coef = new Float32Array(n);
    const loss = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      if (lossFn === 'cross_entropy') {
        const w = weights ? weights[i] : 1;
        coef[i] = -w;
        loss[i] = -w * pi[i];
        continue;
      }
      const a = adv[i];
      if (a === 0) continue;
      const r = Math.exp(pi[i] - q[i]);
      if (lossFn === 'importance_sampling') {
        coef[i] = -r * a;
        loss[i] = -r * a;
      } else if (lossFn === 'ppo') {
        const clipped = Math.min(Math.max(r, lo), hi);
        const unclippedTerm = r * a;
        const clippedTerm = clipped * a;
        loss[i] = -Math.min(unclippedTerm, clippedTerm);
        // The gradient flows through r only when the unclipped term is the smaller one.
        coef[i] = unclippedTerm <= clippedTerm ? -r * a : 0;
      } else {
        const clipped = Math.min(Math.max(r, lo), hi);
        coef[i] = -clipped * a;
        loss[i] = -clipped * a * pi[i];
      }
    }
    return { coef, loss };
  };
}
