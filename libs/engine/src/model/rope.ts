import * as tf from '@tensorflow/tfjs-core';

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

/**
 * Applies rotary positions to `x` of shape `[B, T, heads, headDim]` with tables shaped `[B, T, 1, headDim]`.
 * The half swap is a reverse over a `[…, 2, headDim/2]` view — an elementwise copy, unlike slicing,
 * which on wasm copies its whole input per call.
 */
export function applyRope(x: tf.Tensor, cos: tf.Tensor, sinSigned: tf.Tensor): tf.Tensor {
  const [b, t, h, d] = x.shape as [number, number, number, number];
  const swapped = tf.reshape(tf.reverse(tf.reshape(x, [b, t, h, 2, d / 2]), [3]), [b, t, h, d]);
  return tf.add(tf.mul(x, cos), tf.mul(swapped, sinSigned));
}
