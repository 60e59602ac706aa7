/**
 * `adv_estimator: gae` — Generalized Advantage Estimation (verl `compute_gae_advantage_return`).
 */
import { maskedWhiten } from '../masked';
import { assertLength, checkShape } from '../shape';
import type { AdvantageInput, AdvantageOutput } from './types';
import { RlError } from '../errors';

/**
 * GAE hyper-parameters (verl `algorithm.gamma`, `algorithm.lam`).
 *
 * @example
 * ```ts
 * const opts: GaeOptions = { gamma: 0.99, lam: 0.95 };
 * ```
 */
export interface GaeOptions {
  /** Discount factor. Default 1. */
  gamma?: number;
  /** GAE λ. Default 1. */
  lam?: number;
}

/**
 * GAE with verl's handling of masks with holes: scanning backwards, a masked token (padding or an
 * environment observation in a multi-turn response) neither contributes a TD error nor breaks the chain —
 * `nextvalues` and `lastgaelam` are carried over it. Returns `returns = advantages + values` (before
 * whitening) and advantages whitened over all unmasked tokens of the batch (not multiplied by the mask;
 * whitening needs at least two unmasked tokens, otherwise advantages are 0 — verl raises).
 *
 * Needs `tokenLevelRewards`, `values`, `responseMask`.
 *
 * @example
 * ```ts
 * const { advantages, returns } = computeGaeAdvantageReturn(
 *   { batch: 1, seqLen: 3, tokenLevelRewards: [0, 0, 1], values: [0.1, 0.2, 0.3], responseMask: [1, 1, 1] },
 *   { gamma: 0.99, lam: 0.95 });
 * ```
 */
export function computeGaeAdvantageReturn(input: AdvantageInput, options: GaeOptions = {}): AdvantageOutput {
  const n = checkShape(input);
  const { batch, seqLen, tokenLevelRewards: r, responseMask: m, values } = input;
  assertLength('tokenLevelRewards', r, n);
  assertLength('responseMask', m, n);
  if (values == null) throw new RlError('RL_INVALID_INPUT', 'gae needs values', 'values');
  assertLength('values', values, n);
  const gamma = options.gamma ?? 1;
  const lam = options.lam ?? 1;
  const adv = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    let nextValue = 0;
    let lastGaeLam = 0;
    const o = i * seqLen;
    for (let t = seqLen - 1; t >= 0; t--) {
      const k = o + t;
      const delta = r[k] + gamma * nextValue - values[k];
      const candidate = delta + gamma * lam * lastGaeLam;
      const mk = m[k];
      nextValue = values[k] * mk + (1 - mk) * nextValue;
      lastGaeLam = candidate * mk + (1 - mk) * lastGaeLam;
      adv[k] = lastGaeLam;
    }
  }
  const returns = new Float64Array(n);
  for (let k = 0; k < n; k++) returns[k] = adv[k] + values[k];
  return { advantages: maskedWhiten(adv, m), returns };
}
