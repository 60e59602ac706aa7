/**
 * Grouping of rows by prompt id (verl's `id2score` dictionaries), in first-seen order.
 */
import type { Uid } from '../shape';
import { RlError } from '../errors';

/**
 * Row indices per group id, in order of first appearance (the order verl's `defaultdict` iterates in).
 *
 * @example
 * ```ts
 * groupRows(['a', 'b', 'a']); // Map { 'a' => [0, 2], 'b' => [1] }
 * ```
 */
export function groupRows(index: ArrayLike<Uid>): Map<Uid, number[]> {
  const groups = new Map<Uid, number[]>();
  for (let i = 0; i < index.length; i++) {
    const id = index[i];
    let rows = groups.get(id);
    if (!rows) {
      rows = [];
      groups.set(id, rows);
    }
    rows.push(i);
  }
  return groups;
}

/**
 * Mean and unbiased standard deviation of a group (`torch.mean`, `torch.std`).
 *
 * @example
 * ```ts
 * const s: GroupStats = groupStats([1, 0], [0, 1]); // { mean: 0.5, std: ≈0.707, count: 2 }
 * ```
 */
export interface GroupStats {
  /** Group mean; verl uses 0 for a singleton group. */
  mean: number;
  /** Unbiased standard deviation; verl uses 1 for a singleton group. */
  std: number;
  /** Number of rows. */
  count: number;
}

/**
 * verl's GRPO group statistics over `values[rows]`: singleton groups get `mean = 0, std = 1`, larger
 * groups the sample mean and the unbiased (n - 1) standard deviation.
 *
 * @example
 * ```ts
 * groupStats([1, 0, 1], [0, 1, 2]); // { mean: 2/3, std: ≈0.577, count: 3 }
 * ```
 */
export function groupStats(values: ArrayLike<number>, rows: readonly number[]): GroupStats {
  const count = rows.length;
  if (count === 0) throw new RlError('RL_INVALID_INPUT', 'empty group', 'index');
  if (count === 1) return { mean: 0, std: 1, count };
  let s = 0;
  for (const r of rows) s += values[r];
  const mean = s / count;
  let ss = 0;
  for (const r of rows) {
    const d = values[r] - mean;
    ss += d * d;
  }
  return { mean, std: Math.sqrt(ss / (count - 1)), count };
}

/**
 * Throws unless `index` has one id per row.
 *
 * @example
 * ```ts
 * requireIndex(['a', 'a'], 2); // returns the index
 * ```
 */
export function requireIndex(index: ArrayLike<Uid> | undefined, batch: number): ArrayLike<Uid> {
  if (index == null) throw new RlError('RL_INVALID_INPUT', 'index (one group id per row) is required by this estimator', 'index');
  if (index.length !== batch) throw new RlError('RL_INVALID_INPUT', `index has length ${index.length}, expected ${batch}`, 'index');
  return index;
}

/**
 * Broadcasts one scalar per row over the row's tokens and multiplies by the mask (`scores.unsqueeze(-1) * mask`).
 *
 * @example
 * ```ts
 * broadcastRows([2, 3], [1, 0, 1, 1], 2, 2); // [2, 0, 3, 3]
 * ```
 */
export function broadcastRows(perRow: ArrayLike<number>, mask: ArrayLike<number>, batch: number, seqLen: number): Float64Array {
  const out = new Float64Array(batch * seqLen);
  for (let i = 0; i < batch; i++) {
    const v = perRow[i];
    for (let t = i * seqLen; t < (i + 1) * seqLen; t++) out[t] = mask[t] === 0 ? 0 : v * mask[t];
  }
  return out;
}
