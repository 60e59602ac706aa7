import * as tf from '@tensorflow/tfjs-core';

/** A linear map on `[n, in]` rows (a plain matmul, or one with a LoRA update). */
export type Linear = (x: tf.Tensor2D) => tf.Tensor2D;

/**
 * The SwiGLU MLP of Llama/Qwen2, `down(silu(gate(x)) · up(x))`, on `x` of shape `[n, hidden]`.
 * The projections are functions so a LoRA adapter can wrap each one.
 * Gate and up stay two products rather than one fused product split afterwards: slicing copies.
 */
export function swiglu(x: tf.Tensor2D, gate: Linear, up: Linear, down: Linear): tf.Tensor2D {
  const g = gate(x);
  const act = tf.mul(g, tf.sigmoid(g));
  return down(tf.mul(act, up(x)) as tf.Tensor2D);
}
