/**
 * What the two optimal-token-baseline estimators share (verl repeats it in both functions): the checked
 * inputs, returns-to-go and cumulative path variance, and the zero-tail rule. Not exported by the package.
 */
import { RlError } from '../errors';
import { assertLength, type NumArray } from '../shape';
import type { AdvantageInput } from './types';

/** The inputs both optimal-token-baseline estimators read, checked. */
export function otbInputs(input: AdvantageInput): { oldLogProbs: NumArray; sumPiSquared: NumArray; isw?: NumArray } {
  const n = input.batch * input.seqLen;
  if (input.oldLogProbs == null) throw new RlError('RL_INVALID_INPUT', 'optimal_token_baseline needs oldLogProbs', 'oldLogProbs');
  if (input.sumPiSquared == null) throw new RlError('RL_INVALID_INPUT', 'optimal_token_baseline needs sumPiSquared', 'sumPiSquared');
  assertLength('oldLogProbs', input.oldLogProbs, n);
  assertLength('sumPiSquared', input.sumPiSquared, n);
  if (input.rolloutIsWeights != null) assertLength('rolloutIsWeights', input.rolloutIsWeights, n);
  return { oldLogProbs: input.oldLogProbs, sumPiSquared: input.sumPiSquared, ...(input.rolloutIsWeights != null ? { isw: input.rolloutIsWeights } : {}) };
}

/**
 * The per-row sequences both estimators start from: returns-to-go `G_t = Σ_{t' ≥ t} r·m` and the
 * cumulative path variance `W_t = Σ_{t' ≤ t} w·m` with `w = (1 − 2·exp(oldLogProb) + Σπ²)·ρ²`. Masked
 * tokens contribute nothing (and are never read, so NaN there does not spread).
 */
export function otbReturnsAndWeights(input: AdvantageInput): { returns: Float64Array; wCum: Float64Array } {
  const { batch, seqLen, tokenLevelRewards: r, responseMask: m } = input;
  const { oldLogProbs, sumPiSquared, isw } = otbInputs(input);
  const n = batch * seqLen;
  const returns = new Float64Array(n);
  const wCum = new Float64Array(n);
  for (let i = 0; i < batch; i++) {
    const o = i * seqLen;
    let acc = 0;
    for (let t = seqLen - 1; t >= 0; t--) {
      const mk = m[o + t];
      if (mk !== 0) acc += r[o + t] * mk;
      returns[o + t] = acc;
    }
    let w = 0;
    for (let t = 0; t < seqLen; t++) {
      const k = o + t;
      const mk = m[k];
      if (mk !== 0) {
        let step = 1 - 2 * Math.exp(oldLogProbs[k]) + sumPiSquared[k];
        if (isw) step *= isw[k] * isw[k];
        w += step * mk;
      }
      wCum[k] = w;
    }
  }
  return { returns, wCum };
}

/**
 * The row of a group whose baseline tail is zeroed, and from which position: when exactly one row has the
 * largest length and it is strictly longer than the second-longest, `[that row, second length]`; else
 * null. `rows` lists the group's members, `lengths[j]` the length of `rows[j]`.
 */
export function zeroTail(rows: readonly number[], lengths: readonly number[]): [number, number] | null {
  const sorted = [...lengths].sort((a, b) => a - b);
  const max = Math.trunc(sorted[sorted.length - 1]);
  const second = Math.trunc(sorted[sorted.length - 2]);
  const longest = lengths.flatMap((l, j) => (l === max ? [j] : []));
  return longest.length === 1 && max > second ? [rows[longest[0]], second] : null;
}
