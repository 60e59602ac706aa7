import * as tf from '@tensorflow/tfjs-core';
import { customOp } from './custom-op';
import { nativeLayerOps, rmsNormGradKernel, rmsNormKernel } from '../kernels/native-layer-ops';

/**
 * RMSNorm over the last axis as Llama/Qwen2 define it: `w · x / sqrt(mean(x²) + eps)` (no mean
 * subtraction, no bias, weight not offset by one). Only `x` and `w` are kept for the backward pass
 * (its intermediates are recomputed there): with `r = 1/sqrt(mean(x²) + eps)` and `g = dy · w`,
 * `dx = r·g − x·r³·mean(g·x)` and `dw = Σ_rows dy · x · r`. With the native addon both directions are
 * one threaded kernel each (kernels/native-layer-ops.ts).
 */
export function rmsNorm(x: tf.Tensor, weight: tf.Tensor, eps: number): tf.Tensor {
  if (nativeLayerOps()) {
    return customOp<[tf.Tensor, tf.Tensor]>((input, w, save) => {
      save([input, w]);
      return { value: rmsNormKernel(input, w, eps), gradFunc: (dy, [xs, ws]) => rmsNormGradKernel(xs, ws, dy, eps) };
    })(x, weight);
  }
  const inv = (t: tf.Tensor) => tf.rsqrt(tf.add(tf.mean(tf.square(t), -1, true), eps));
  const f = customOp<[tf.Tensor, tf.Tensor]>((input, w, save) => {
    save([input, w]);
    return {
      value: tf.mul(tf.mul(input, inv(input)), w),
      gradFunc: (dy, [xs, ws]) => {
        const r = inv(xs);
        const g = tf.mul(dy, ws);
        const dx = tf.sub(tf.mul(g, r), tf.mul(tf.mul(xs, tf.mul(r, tf.square(r))), tf.mean(tf.mul(g, xs), -1, true)));
        const dw = tf.sum(tf.reshape(tf.mul(tf.mul(dy, xs), r), [-1, ws.shape[0]]), 0);
        return [dx, dw];
      },
    };
  });
  return f(x, weight);
}
