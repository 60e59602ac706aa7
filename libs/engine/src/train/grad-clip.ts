import * as tf from '@tensorflow/tfjs-core';

/**
 * The global L2 norm of a set of gradients, `sqrt(Σ ‖g‖²)`, read back as a number (one sync).
 *
 * @example
 * ```ts
 * globalNorm([tf.tensor1d([3]), tf.tensor1d([4])]); // 5
 * ```
 */
export function globalNorm(grads: Iterable<tf.Tensor>): number {
  return tf.tidy(() => {
    const squares = [...grads].map((g) => tf.sum(tf.square(g)));
    if (squares.length === 0) return 0;
    return Math.sqrt(tf.addN(squares).dataSync()[0]);
  });
}

/**
 * The factor `torch.nn.utils.clip_grad_norm_` scales gradients by: `min(1, maxNorm / (norm + 1e-6))`
 * (1 when `maxNorm` is undefined or not positive).
 */
export function clipFactor(norm: number, maxNorm: number | undefined): number {
  if (maxNorm === undefined || !(maxNorm > 0)) return 1;
  return Math.min(1, maxNorm / (norm + 1e-6));
}
