/**
 * Entropy of the token distribution from logits (verl `entropy_from_logits`, `compute_entropy_loss`).
 */
import { aggLoss, type AggOptions, type LossAggMode } from '../aggregation';
import { assertLength, checkShape, type BatchShape, type NumArray } from '../shape';

/**
 * Row-wise entropy of `softmax(logits)` over a vocabulary dimension: `logits` is `[rows, vocab]` row-major
 * and the result has one value per row, `H = logsumexp(z) - Σ softmax(z)·z`, computed stably (max
 * subtraction, so logits of ±1e4 are fine). A row containing `-Infinity` logits is handled (those
 * entries have zero probability).
 *
 * @example
 * ```ts
 * entropyFromLogits([0, 0, 0, 0], 1, 4); // [log 4]
 * ```
 */
export function entropyFromLogits(logits: NumArray, rows: number, vocab: number): Float64Array {
  assertLength('logits', logits, rows * vocab);
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * vocab;
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (logits[o + j] > max) max = logits[o + j];
    if (max === -Infinity || Number.isNaN(max)) {
      out[r] = NaN;
      continue;
    }
    let z = 0;
    let ez = 0;
    for (let j = 0; j < vocab; j++) {
      const d = logits[o + j] - max;
      const e = Math.exp(d);
      z += e;
      if (e > 0) ez += e * d;
    }
    // H = log Z - E[d] with d = z - max (the shift cancels).
    out[r] = Math.log(z) - ez / z;
  }
  return out;
}

/**
 * `d H_r / d logits[r, j] = -p_j · (log p_j + H_r)` for every row (`[rows, vocab]`), e.g. for an entropy
 * bonus `-entropy_coeff · H` back-propagated through the logits.
 *
 * @example
 * ```ts
 * entropyGradLogits([0, 0], 1, 2); // [0, 0] (uniform: entropy is maximal)
 * ```
 */
export function entropyGradLogits(logits: NumArray, rows: number, vocab: number): Float64Array {
  assertLength('logits', logits, rows * vocab);
  const out = new Float64Array(rows * vocab);
  for (let r = 0; r < rows; r++) {
    const o = r * vocab;
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (logits[o + j] > max) max = logits[o + j];
    let z = 0;
    for (let j = 0; j < vocab; j++) z += Math.exp(logits[o + j] - max);
    const logZ = Math.log(z);
    let h = 0;
    for (let j = 0; j < vocab; j++) {
      const logp = logits[o + j] - max - logZ;
      const p = Math.exp(logp);
      if (p > 0) h -= p * logp;
    }
    for (let j = 0; j < vocab; j++) {
      const logp = logits[o + j] - max - logZ;
      const p = Math.exp(logp);
      out[o + j] = p > 0 ? -p * (logp + h) : 0;
    }
  }
  return out;
}

/**
 * Input of {@link computeEntropyLoss}.
 *
 * @example
 * ```ts
 * const input: EntropyLossInput = { batch: 1, seqLen: 1, vocab: 3, logits: [0.1, 2, -1], responseMask: [1] };
 * ```
 */
export interface EntropyLossInput extends BatchShape {
  /** Logits `[batch, seqLen, vocab]` row-major. */
  logits: NumArray;
  /** Vocabulary size. */
  vocab: number;
  /** Response mask `[batch, seqLen]`. */
  responseMask: NumArray;
}

/**
 * verl `compute_entropy_loss`: per-token entropy aggregated with `lossAggMode`; returns the per-token
 * entropies and `d loss / d logits` (`[batch, seqLen, vocab]`).
 *
 * @example
 * ```ts
 * const { loss } = computeEntropyLoss({ batch: 1, seqLen: 1, vocab: 2, logits: [0, 0], responseMask: [1] });
 * // loss = log 2
 * ```
 */
export function computeEntropyLoss(
  input: EntropyLossInput,
  lossAggMode: LossAggMode = 'token-mean',
  aggOptions: AggOptions = {},
): { loss: number; entropy: Float64Array; dLogits: Float64Array } {
  const n = checkShape(input);
  const { vocab } = input;
  assertLength('responseMask', input.responseMask, n);
  const entropy = entropyFromLogits(input.logits, n, vocab);
  const { loss, weights } = aggLoss(entropy, input.responseMask, input, lossAggMode, aggOptions);
  const g = entropyGradLogits(input.logits, n, vocab);
  for (let k = 0; k < n; k++) {
    for (let j = 0; j < vocab; j++) g[k * vocab + j] = weights[k] === 0 ? 0 : g[k * vocab + j] * weights[k];
  }
  return { loss, entropy, dLogits: g };
}
