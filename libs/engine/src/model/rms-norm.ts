import * as tf from '@tensorflow/tfjs-core';

/**
 * RMSNorm over the last axis as Llama/Qwen2 define it: `w · x / sqrt(mean(x²) + eps)` (no mean
 * subtraction, no bias, weight not offset by one).
 */
export function rmsNorm(x: tf.Tensor, weight: tf.Tensor, eps: number): tf.Tensor {
  const variance = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(variance, eps))), weight);
}
