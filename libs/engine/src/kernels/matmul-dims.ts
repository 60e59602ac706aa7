import type * as tf from '@tensorflow/tfjs-core';

/** The sizes of `op(A) · op(B)` for a BatchMatMul kernel's inputs (row-major, last two axes the matrix). */
export interface MatMulDims {
  m: number;
  n: number;
  /** A's inner size; B's is `kb` (a valid product has `k === kb`). */
  k: number;
  kb: number;
  /** Leading (batch) axes of each operand, and their products. */
  aBatch: number[];
  bBatch: number[];
  batchA: number;
  batchB: number;
}

/** Reads a BatchMatMul's dimensions from its inputs' shapes and transpose flags. */
export function matMulDims(a: tf.TensorInfo, b: tf.TensorInfo, transposeA: boolean, transposeB: boolean): MatMulDims {
  const aRank = a.shape.length;
  const bRank = b.shape.length;
  const aBatch = a.shape.slice(0, -2);
  const bBatch = b.shape.slice(0, -2);
  return {
    m: transposeA ? a.shape[aRank - 1] : a.shape[aRank - 2],
    n: transposeB ? b.shape[bRank - 2] : b.shape[bRank - 1],
    k: transposeA ? a.shape[aRank - 2] : a.shape[aRank - 1],
    kb: transposeB ? b.shape[bRank - 1] : b.shape[bRank - 2],
    aBatch,
    bBatch,
    batchA: aBatch.reduce((p, v) => p * v, 1),
    batchB: bBatch.reduce((p, v) => p * v, 1),
  };
}
