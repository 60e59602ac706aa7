/**
 * Array conventions shared by every function of the package.
 *
 * Matrices are flat, row-major `[batch, seqLen]` arrays (`Float32Array`, `Float64Array` or `number[]`);
 * element `(i, t)` lives at `i * seqLen + t`. Masks use the same layout; a mask entry is "on" when it is
 * non-zero, and (as in verl) a non-binary mask value also acts as a weight. Outputs are `Float64Array`:
 * all arithmetic runs in float64 whatever the input type.
 */
import { RlError } from './errors';

/**
 * Any readable numeric array (typed array or `number[]`).
 *
 * @example
 * ```ts
 * const a: NumArray = new Float32Array([0.5, 1]);
 * const b: NumArray = [0.5, 1];
 * ```
 */
export type NumArray = ArrayLike<number>;

/**
 * A prompt/group id (verl's `uid` / `index` entries).
 *
 * @example
 * ```ts
 * const ids: Uid[] = ['prompt-1', 'prompt-1', 42];
 * ```
 */
export type Uid = string | number;

/**
 * Shape of a `[batch, seqLen]` matrix.
 *
 * @example
 * ```ts
 * const shape: BatchShape = { batch: 2, seqLen: 3 }; // arrays of length 6
 * ```
 */
export interface BatchShape {
  /** Number of rows (responses). */
  batch: number;
  /** Number of columns (response tokens, padded). */
  seqLen: number;
}

/**
 * Throws an `RL_INVALID_INPUT` {@link RlError} unless `arr` holds exactly `expected` numbers.
 *
 * @example
 * ```ts
 * assertLength('responseMask', new Float32Array(6), 6); // ok
 * ```
 */
export function assertLength(name: string, arr: ArrayLike<unknown> | undefined | null, expected: number): void {
  if (arr == null) throw new RlError('RL_INVALID_INPUT', `${name} is required`, name);
  if (arr.length !== expected) {
    throw new RlError('RL_INVALID_INPUT', `${name} has length ${arr.length}, expected ${expected}`, name);
  }
}

/**
 * Validates a shape (non-negative integers) and returns `batch * seqLen`.
 *
 * @example
 * ```ts
 * checkShape({ batch: 2, seqLen: 3 }); // 6
 * ```
 */
export function checkShape(shape: BatchShape): number {
  const { batch, seqLen } = shape;
  if (!Number.isInteger(batch) || batch < 0) throw new RlError('RL_INVALID_INPUT', `batch must be a non-negative integer, got ${batch}`, 'batch');
  if (!Number.isInteger(seqLen) || seqLen < 0) throw new RlError('RL_INVALID_INPUT', `seqLen must be a non-negative integer, got ${seqLen}`, 'seqLen');
  return batch * seqLen;
}

/**
 * Per-row sums of a `[batch, seqLen]` matrix over *all* columns (verl's `x.sum(dim=-1)`).
 *
 * @example
 * ```ts
 * rowSums([1, 2, 3, 4], { batch: 2, seqLen: 2 }); // Float64Array [3, 7]
 * ```
 */
export function rowSums(x: NumArray, shape: BatchShape): Float64Array {
  const { batch, seqLen } = shape;
  assertLength('x', x, batch * seqLen);
  const out = new Float64Array(batch);
  for (let i = 0; i < batch; i++) {
    let s = 0;
    const o = i * seqLen;
    for (let t = 0; t < seqLen; t++) s += x[o + t];
    out[i] = s;
  }
  return out;
}
