/** One of the most likely next tokens at a position, with its log-prob under the model. */
export interface TokenAlternative {
  id: number;
  /** log p(id) under the model's own distribution (temperature 1, nothing filtered). */
  logProb: number;
}

/**
 * The `k` most likely ids of one row of logits, most likely first (ties: the lower id first), among
 * the ids below `limit` (those a tokenizer can decode), with log-probs `logits[id] - logZ`. One pass
 * over the row keeping a sorted list of `k`: O(vocabulary) for the small `k` OpenAI's APIs allow.
 *
 * @example
 * ```ts
 * topAlternatives(new Float32Array([0, 2, 1]), 2, logSumExp); // [{ id: 1, … }, { id: 2, … }]
 * ```
 */
export function topAlternatives(logits: ArrayLike<number>, k: number, logZ: number, limit: number = logits.length): TokenAlternative[] {
  const n = Math.min(limit, logits.length);
  if (k <= 0 || n === 0) return [];
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = logits[i];
    if (ids.length === k && x <= logits[ids[k - 1]]) continue;
    let at = ids.length === k ? k - 1 : ids.length;
    while (at > 0 && logits[ids[at - 1]] < x) at--;
    ids.splice(at, 0, i);
    if (ids.length > k) ids.pop();
  }
  return ids.map((id) => ({ id, logProb: logits[id] - logZ }));
}

/** log Σ exp(logits): the normaliser of a row's log-softmax, in float64. */
export function logSumExp(logits: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  return max + Math.log(sum);
}
