import * as tf from '@tensorflow/tfjs-core';

/**
 * The SwiGLU MLP of Llama/Qwen2, `down(silu(gate(x)) · up(x))`, on `x` of shape `[n, hidden]` with
 * weights stored `[in, out]` so each product is a plain 2-D matmul (the fast path on wasm).
 * Gate and up stay two products rather than one fused product split afterwards: slicing copies.
 */
export function swiglu(x: tf.Tensor2D, gate: tf.Tensor2D, up: tf.Tensor2D, down: tf.Tensor2D): tf.Tensor2D {
  const g = tf.matMul(x, gate);
  const act = tf.mul(g, tf.sigmoid(g));
  return tf.matMul(tf.mul(act, tf.matMul(x, up)), down) as tf.Tensor2D;
}
