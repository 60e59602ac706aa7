import * as tf from '@tensorflow/tfjs-core';
import { customOp } from './custom-op';
import { nativeLayerOps, ropeKernel } from '../kernels/native-layer-ops';

/**
 * Cos and signed-sin tables of rotary positions for given position ids, `[n, headDim]` each.
 *
 * Hugging Face's convention: `inv_freq[i] = 1 / theta^(2i / headDim)`, angles `pos · inv_freq`
 * repeated over both halves (`cat(freqs, freqs)`), and `q·cos + rotate_half(q)·sin` with
 * `rotate_half([x1, x2]) = [-x2, x1]`. The sign of rotate_half is folded into the sin table
 * (negative on the first half), so the model only needs to swap the halves. Angles are rounded to
 * float32 as `transformers` computes them, which matters at long positions.
 */
export function ropeTables(positions: ArrayLike<number>, headDim: number, theta: number): { cos: Float32Array; sinSigned: Float32Array } {
  const half = headDim / 2;
  const invFreq = new Float64Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = Math.fround(1 / Math.pow(theta, Math.fround((2 * i) / headDim)));
  const n = positions.length;
  const cos = new Float32Array(n * headDim);
  const sinSigned = new Float32Array(n * headDim);
  for (let p = 0; p < n; p++) {
    const base = p * headDim;
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(positions[p] * invFreq[i]);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[base + i] = c;
      cos[base + half + i] = c;
      sinSigned[base + i] = -s;
      sinSigned[base + half + i] = s;
    }
  }
  return { cos, sinSigned };
}

const swapCache = new Map<number, Float32Array>();

/** The `[headDim, headDim]` permutation that swaps the two halves of a vector (symmetric, its own inverse). */
export function halfSwapMatrix(headDim: number): Float32Array {
  let m = swapCache.get(headDim);
  if (!m) {
    const half = headDim / 2;
    m = new Float32Array(headDim * headDim);
    for (let i = 0; i < half; i++) {
      m[i * headDim + i + half] = 1;
      m[(i + half) * headDim + i] = 1;
    }
    swapCache.set(headDim, m);
  }
  return m;
}

/**
 * Applies rotary positions to `x` of shape `[B, T, heads, headDim]` with tables shaped `[B, T, 1, headDim]`:
 * `x·cos + swap(x)·sin`. The half swap is a product with a permutation matrix `swap`
 * ({@link halfSwapMatrix}): on wasm a 2-D matmul runs ~6× faster than `reverse` or `gather` along the
 * last axis, and far faster than slicing, which copies its whole input per call. The permutation is
 * symmetric, so the gradient is `dy·cos + swap(dy·sin)` and needs only the tables, which are saved (a
 * saved tensor shares its buffer; a closure would not do: tfjs frees the forward pass's tensors before
 * the backward pass runs).
 */
export function applyRope(x: tf.Tensor, cos: tf.Tensor, sinSigned: tf.Tensor, swap: tf.Tensor2D): tf.Tensor {
  if (nativeLayerOps()) {
    // One threaded pass each way in the addon, halves swapped in place of the permutation product.
    return customOp<[tf.Tensor]>((input, save) => {
      save([cos, sinSigned]);
      return { value: ropeKernel(input, cos, sinSigned, false), gradFunc: (dy, [c, s]) => ropeKernel(dy, c, s, true) };
    })(x);
  }
  const d = x.shape[x.shape.length - 1] as number;
  const swapHalves = (t: tf.Tensor, p: tf.Tensor) => tf.reshape(tf.matMul(tf.reshape(t, [-1, d]), p as tf.Tensor2D), t.shape);
  const rotate = customOp<[tf.Tensor]>((input, save) => {
    save([cos, sinSigned, swap]);
    return {
      value: tf.add(tf.mul(input, cos), tf.mul(swapHalves(input, swap), sinSigned)),
      gradFunc: (dy, [c, s, p]) => tf.add(tf.mul(dy, c), swapHalves(tf.mul(dy, s), p)),
    };
  });
  return rotate(x);
}
