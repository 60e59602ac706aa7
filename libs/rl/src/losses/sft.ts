/**
 * Supervised fine-tuning cross-entropy with a loss mask (verl SFT trainer / `sft_loss`).
 */
import { aggLoss, type AggOptions, type LossAggMode } from '../aggregation';
import { assertLength, checkShape, type BatchShape, type NumArray } from '../shape';
import { RlError } from '../errors';

/**
 * Log-probability of each label under `softmax(logits)` (verl `logprobs_from_logits`), computed stably as
 * `logits[label] - logsumexp(logits)`. `logits` is `[rows, vocab]`, `labels` has `rows` integer entries.
 *
 * @example
 * ```ts
 * logprobsFromLogits([0, 0], [1], 1, 2); // [-log 2]
 * ```
 */
export function logprobsFromLogits(logits: NumArray, labels: ArrayLike<number>, rows: number, vocab: number): Float64Array {
  assertLength('logits', logits, rows * vocab);
  assertLength('labels', labels, rows);
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * vocab;
    const label = labels[r];
    if (!Number.isInteger(label) || label < 0 || label >= vocab) throw new RlError('RL_INVALID_INPUT', `label ${label} out of range [0, ${vocab})`, 'labels');
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (logits[o + j] > max) max = logits[o + j];
    let z = 0;
    for (let j = 0; j < vocab; j++) z += Math.exp(logits[o + j] - max);
    out[r] = logits[o + label] - max - Math.log(z);
  }
  return out;
}

/**
 * Input of {@link sftLoss}.
 *
 * @example
 * ```ts
 * const input: SftLossInput = { batch: 1, seqLen: 2, logProb: [-0.5, -2], lossMask: [0, 1] };
 * ```
 */
export interface SftLossInput extends BatchShape {
  /** Per-token log-probs of the target tokens `[batch, seqLen]`. */
  logProb: NumArray;
  /** 1 where the token is trained on (e.g. assistant tokens), 0 elsewhere. */
  lossMask: NumArray;
}

/**
 * SFT negative log-likelihood on log-probs: `loss = agg_loss(-logProb, lossMask, mode)` (token-mean is
 * verl's SFT default) and `dLogProb = -W`. Use this when the engine already gathered target log-probs.
 *
 * @example
 * ```ts
 * sftLoss({ batch: 1, seqLen: 3, logProb: [-1, -2, -3], lossMask: [0, 1, 1] }); // loss 2.5
 * ```
 */
export function sftLoss(input: SftLossInput, lossAggMode: LossAggMode = 'token-mean', aggOptions: AggOptions = {}): { loss: number; dLogProb: Float64Array } {
  const n = checkShape(input);
  assertLength('logProb', input.logProb, n);
  const neg = new Float64Array(n);
  for (let k = 0; k < n; k++) neg[k] = -input.logProb[k];
  const { loss, weights } = aggLoss(neg, input.lossMask, input, lossAggMode, aggOptions);
  const dLogProb = new Float64Array(n);
  for (let k = 0; k < n; k++) dLogProb[k] = weights[k] === 0 ? 0 : -weights[k];
  return { loss, dLogProb };
}

/**
 * Input of {@link sftCrossEntropyFromLogits}.
 *
 * @example
 * ```ts
 * const input: SftLogitsInput = { batch: 1, seqLen: 1, vocab: 2, logits: [0, 1], labels: [1], lossMask: [1] };
 * ```
 */
export interface SftLogitsInput extends BatchShape {
  /** Logits `[batch, seqLen, vocab]` row-major (already aligned with the labels, i.e. shifted). */
  logits: NumArray;
  /** Vocabulary size. */
  vocab: number;
  /** Target token ids `[batch, seqLen]`. */
  labels: ArrayLike<number>;
  /** Loss mask `[batch, seqLen]`. */
  lossMask: NumArray;
}

/**
 * SFT cross-entropy from logits: log-probs of the labels, the aggregated loss, `d loss / d logProb` and
 * `d loss / d logits = W · (softmax(logits) - onehot(label))`.
 *
 * @example
 * ```ts
 * const r = sftCrossEntropyFromLogits({ batch: 1, seqLen: 1, vocab: 2, logits: [0, 0], labels: [0], lossMask: [1] });
 * // r.loss = log 2, r.dLogits = [-0.5, 0.5]
 * ```
 */
export function sftCrossEntropyFromLogits(
  input: SftLogitsInput,
  lossAggMode: LossAggMode = 'token-mean',
  aggOptions: AggOptions = {},
): { loss: number; logProbs: Float64Array; dLogProb: Float64Array; dLogits: Float64Array } {
  const n = checkShape(input);
  const { vocab, logits, labels } = input;
  const logProbs = logprobsFromLogits(logits, labels, n, vocab);
  const { loss, dLogProb } = sftLoss({ batch: input.batch, seqLen: input.seqLen, logProb: logProbs, lossMask: input.lossMask }, lossAggMode, aggOptions);
  const dLogits = new Float64Array(n * vocab);
  for (let k = 0; k < n; k++) {
    const w = -dLogProb[k];
    if (w === 0) continue;
    const o = k * vocab;
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (logits[o + j] > max) max = logits[o + j];
    let z = 0;
    for (let j = 0; j < vocab; j++) z += Math.exp(logits[o + j] - max);
    for (let j = 0; j < vocab; j++) dLogits[o + j] = w * (Math.exp(logits[o + j] - max) / z - (j === labels[k] ? 1 : 0));
  }
  return { loss, logProbs, dLogProb, dLogits };
}
