import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { hasLogProb, type TokenBatch } from '../model/token-batch';
import { alignToTokens, type Model } from '../model/transformer';

/**
 * Per-token coefficients of a surrogate loss `Σ logProbCoef·logProb + Σ entropyCoef·entropy + Σ valueCoef·value`,
 * token-aligned like {@link TokenScores} (`[B·T]`). Its gradient equals the gradient of any loss L whose
 * derivative per token is the coefficient: give `logProbCoef = dL/dlogProb` as `@opentinker/rl` returns
 * it (`dLogProb`) and the backward pass is that of L. Entries for tokens without a log-prob are ignored.
 */
export interface LossCoefficients {
  logProbCoef: ArrayLike<number>;
  entropyCoef?: ArrayLike<number>;
  /** dL/dvalue per token for a model with a value head (`@opentinker/rl`'s value loss returns it as `dVpreds`). */
  valueCoef?: ArrayLike<number>;
}

/** Current per-token values a coefficient function receives (token-aligned; `values` only with a value head). */
export interface CurrentScores {
  logProbs: Float32Array;
  entropy: Float32Array;
  values?: Float32Array;
}

/**
 * Coefficients of the SFT cross-entropy: the mean negative log-likelihood over tokens where `lossMask`
 * is 1 (token-aligned; typically the response tokens), i.e. `logProbCoef = -lossMask / count`.
 *
 * @example
 * ```ts
 * trainer.step(batch, crossEntropyCoefficients(batch, responseMask));
 * ```
 */
export function crossEntropyCoefficients(batch: TokenBatch, lossMask?: ArrayLike<number>): LossCoefficients {
  const n = batch.batchSize * batch.seqLen;
  const coef = new Float32Array(n);
  let count = 0;
  for (let b = 0; b < batch.batchSize; b++) {
    for (let t = 0; t < batch.seqLen; t++) {
      const i = b * batch.seqLen + t;
      if (hasLogProb(batch, b, t) && (lossMask ? lossMask[i] : 1) !== 0) {
        coef[i] = 1;
        count++;
      }
    }
  }
  if (count > 0) for (let i = 0; i < n; i++) coef[i] = -coef[i] / count;
  return { logProbCoef: coef };
}

/** Shifts token-aligned coefficients onto the positions that predict those tokens. @internal */
export function toNextAligned(batch: TokenBatch, coef: ArrayLike<number>, field: string): Float32Array {
  const n = batch.batchSize * batch.seqLen;
  if (coef.length !== n) throw new EngineError('ENGINE_INVALID_INPUT', `${field} has ${coef.length} entries, expected ${n}`, field);
  const out = new Float32Array(n);
  for (let b = 0; b < batch.batchSize; b++) {
    for (let t = 1; t < batch.seqLen; t++) {
      const i = b * batch.seqLen + t;
      if (!hasLogProb(batch, b, t)) continue;
      const c = coef[i];
      if (!Number.isFinite(c)) throw new EngineError('ENGINE_INVALID_INPUT', `${field}[${i}] is not finite (${c})`, field);
      if (c !== 0 && batch.scored && !batch.scored[i]) throw new EngineError('ENGINE_INVALID_INPUT', `${field}[${i}] is ${c} for a token outside batch.scored`, field);
      out[i - 1] = c;
    }
  }
  return out;
}

/** Output of {@link surrogateLoss}: the scalar to differentiate and the position-aligned values it was built on. */
export interface SurrogateLoss {
  loss: tf.Scalar;
  /** Next-token log-probs `[B·T]`, position-aligned. */
  logProbs: tf.Tensor1D;
  entropy: tf.Tensor1D;
  values?: tf.Tensor1D;
  hidden: tf.Tensor2D;
}

/**
 * The differentiable surrogate `Σ c·logProb + Σ e·entropy` of a batch. `coefficients` may be a function
 * of the current (token-aligned) log-probs and entropies, so a loss like PPO's, whose per-token gradient
 * depends on the current policy, needs one forward pass only. Must be called inside `tf.tidy` (or
 * `tf.variableGrads`). @internal
 */
export function surrogateLoss(model: Model, batch: TokenBatch, coefficients: LossCoefficients | ((scores: CurrentScores) => LossCoefficients)): SurrogateLoss {
  const { hidden, ...scores } = model.nextTokenScores(batch);
  return { ...surrogateOfScores(batch, scores, coefficients), hidden };
}

/** {@link surrogateLoss} from scores already computed (position-aligned). @internal */
export function surrogateOfScores(
  batch: TokenBatch,
  scores: { logProbs: tf.Tensor1D; entropy: tf.Tensor1D; values?: tf.Tensor1D },
  coefficients: LossCoefficients | ((scores: CurrentScores) => LossCoefficients),
): Omit<SurrogateLoss, 'hidden'> {
  const { logProbs, entropy, values } = scores;
  let coefs: LossCoefficients;
  if (typeof coefficients === 'function') {
    const s = alignToTokens(batch, logProbs.dataSync() as Float32Array, entropy.dataSync() as Float32Array, values?.dataSync() as Float32Array | undefined);
    coefs = coefficients({ logProbs: s.logProbs, entropy: s.entropy, ...(s.values ? { values: s.values } : {}) });
  } else {
    coefs = coefficients;
  }
  const c = tf.tensor1d(toNextAligned(batch, coefs.logProbCoef, 'logProbCoef'));
  let loss = tf.sum(tf.mul(c, logProbs)) as tf.Scalar;
  if (coefs.entropyCoef) {
    const e = tf.tensor1d(toNextAligned(batch, coefs.entropyCoef, 'entropyCoef'));
    loss = tf.add(loss, tf.sum(tf.mul(e, entropy))) as tf.Scalar;
  }
  if (coefs.valueCoef) {
    if (!values) throw new EngineError('ENGINE_INVALID_INPUT', 'valueCoef given but the model has no value head', 'valueCoef');
    const v = tf.tensor1d(toNextAligned(batch, coefs.valueCoef, 'valueCoef'));
    loss = tf.add(loss, tf.sum(tf.mul(v, values))) as tf.Scalar;
  }
  return { loss, logProbs, entropy, ...(values ? { values } : {}) };
}
