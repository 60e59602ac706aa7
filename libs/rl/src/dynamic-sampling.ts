/**
 * DAPO dynamic sampling (verl `algorithm.filter_groups`): drop prompt groups whose responses all got the
 * same reward, since they carry no group-relative learning signal.
 */
import type { Uid } from './shape';
import { RlError } from './errors';

/**
 * Result of {@link filterGroupsByMetricStd}.
 *
 * @example
 * ```ts
 * const { keptUids, keptIndices }: FilterGroupsResult = filterGroupsByMetricStd(['a', 'a'], [0, 1]);
 * ```
 */
export interface FilterGroupsResult {
  /** Group ids kept, in first-seen order. */
  keptUids: Uid[];
  /** Row indices kept, ascending. */
  keptIndices: number[];
}

/**
 * verl DAPO `filter_groups`: groups rows by `uids`, computes the population std (`np.std`) of `metric`
 * (e.g. `acc` or `seq_final_reward`) per group, and keeps a group when its std is > 0 or it has a single
 * row.
 *
 * @example
 * ```ts
 * filterGroupsByMetricStd(['a', 'a', 'b', 'b'], [1, 0, 1, 1]); // { keptUids: ['a'], keptIndices: [0, 1] }
 * ```
 */
export function filterGroupsByMetricStd(uids: ArrayLike<Uid>, metric: ArrayLike<number>): FilterGroupsResult {
  if (uids.length !== metric.length) throw new RlError('RL_INVALID_INPUT', `uids (${uids.length}) and metric (${metric.length}) differ in length`, 'metric');
  const groups = new Map<Uid, number[]>();
  for (let i = 0; i < uids.length; i++) {
    const list = groups.get(uids[i]);
    if (list) list.push(metric[i]);
    else groups.set(uids[i], [metric[i]]);
  }
  const kept = new Set<Uid>();
  for (const [uid, vals] of groups) {
    const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
    const std = Math.sqrt(vals.reduce((a, b) => a + (b - mean) * (b - mean), 0) / vals.length);
    if (std > 0 || vals.length === 1) kept.add(uid);
  }
  const keptIndices: number[] = [];
  for (let i = 0; i < uids.length; i++) if (kept.has(uids[i])) keptIndices.push(i);
  return { keptUids: [...kept], keptIndices };
}
