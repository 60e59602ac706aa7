import * as tf from '@tensorflow/tfjs-core';
import { customOp } from './custom-op';
import { nativeLayerOps, siluProductGradKernel, siluProductKernel } from '../kernels/native-layer-ops';

/** A linear map on `[n, in]` rows (a plain matmul, or one with a LoRA update). */
export type Linear = (x: tf.Tensor2D) => tf.Tensor2D;

/**
 * `silu(g) · u`, keeping only `g` and `u` for the backward pass (the sigmoid is recomputed there):
 * `d/dg = dy · u · σ(g)·(1 + g·(1 − σ(g)))`, `d/du = dy · g·σ(g)`.
 */
const siluProduct = customOp<[tf.Tensor, tf.Tensor]>((g, u, save) => {
  save([g, u]);
  return {
    value: tf.mul(tf.mul(g, tf.sigmoid(g)), u),
    gradFunc: (dy, [gs, us]) => {
      const s = tf.sigmoid(gs);
      const silu = tf.mul(gs, s);
      const dsilu = tf.mul(s, tf.add(1, tf.mul(gs, tf.sub(1, s))));
      return [tf.mul(tf.mul(dy, us), dsilu), tf.mul(dy, silu)];
    },
  };
});

/** The same op with both directions in the addon (one threaded kernel each). */
const nativeSiluProduct = customOp<[tf.Tensor, tf.Tensor]>((g, u, save) => {
  save([g, u]);
  return { value: siluProductKernel(g, u), gradFunc: (dy, [gs, us]) => siluProductGradKernel(gs, us, dy) };
});

/**
 * The SwiGLU MLP of Llama/Qwen2, `down(silu(gate(x)) · up(x))`, on `x` of shape `[n, hidden]`.
 * The projections are functions so a LoRA adapter can wrap each one.
 * Gate and up stay two products rather than one fused product split afterwards: slicing copies.
 */
export function swiglu(x: tf.Tensor2D, gate: Linear, up: Linear, down: Linear): tf.Tensor2D {
  return down((nativeLayerOps() ? nativeSiluProduct : siluProduct)(gate(x), up(x)) as tf.Tensor2D);
}
