import * as tf from '@tensorflow/tfjs-core';
import { addConstant } from './elementwise';
import { customOp } from './custom-op';
import { maskedSoftmaxKernel, nativeLayerOps, softmaxGradKernel } from '../kernels/native-layer-ops';

/** Additive bias for a masked attention score: exp(-1e9 - max) is exactly 0 in float32. */
export const MASKED = -1e9;

/**
 * Positions and the additive attention bias for `queryLen` new tokens per row, after `pastLen` cached
 * ones. `keyMask` is `[B, pastLen + queryLen]` (1 = real token). The position of a token is the number
 * of real tokens before it, so padding never shifts positions. Query `t` may attend to key `s` when
 * `s <= pastLen + t` (causal) and key `s` is real. Returns positions `[B·queryLen]` and bias
 * `[B·queryLen·S]` (row-major `[B, 1, 1, T, S]`).
 */
export function attentionInputs(keyMask: Uint8Array, batchSize: number, pastLen: number, queryLen: number): { positions: Int32Array; bias: Float32Array } {
  const s = pastLen + queryLen;
  const positions = new Int32Array(batchSize * queryLen);
  const bias = new Float32Array(batchSize * queryLen * s);
  for (let b = 0; b < batchSize; b++) {
    const row = b * s;
    let before = 0;
    for (let j = 0; j < pastLen; j++) before += keyMask[row + j];
    for (let t = 0; t < queryLen; t++) {
      positions[b * queryLen + t] = before;
      before += keyMask[row + pastLen + t];
      const base = (b * queryLen + t) * s;
      const limit = pastLen + t;
      for (let j = 0; j < s; j++) if (j > limit || keyMask[row + j] === 0) bias[base + j] = MASKED;
    }
  }
  return { positions, bias };
}

/**
 * Grouped-query attention. `q` is `[B, T, H, hd]` (rotary positions applied, already scaled by
 * 1/sqrt(hd)); `k` and `v` are `[B, KV, S, hd]` (cache included); `bias` is `[B, 1, 1, T, S]`.
 * Query head `h` reads key/value head `floor(h / (H / KV))`, as Hugging Face's `repeat_kv` does — here
 * without copying keys: the G = H/KV query heads of one group are stacked along the query axis.
 * Returns `[B·T, H·hd]`.
 */
export function groupedQueryAttention(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, bias: tf.Tensor): tf.Tensor2D {
  const [b, t, h, hd] = q.shape as [number, number, number, number];
  const kv = k.shape[1] as number;
  const s = k.shape[2] as number;
  const g = h / kv;
  const qg = tf.reshape(tf.transpose(tf.reshape(q, [b, t, kv, g, hd]), [0, 2, 3, 1, 4]), [b, kv, g * t, hd]);
  const scores = tf.reshape(tf.matMul(qg, k, false, true), [b, kv, g, t, s]);
  const probs = tf.reshape(maskedSoftmax(scores, bias), [b, kv, g * t, s]);
  const out = tf.reshape(tf.matMul(probs, v), [b, kv, g, t, hd]);
  return tf.reshape(tf.transpose(out, [0, 3, 1, 2, 4]), [b * t, h * hd]) as tf.Tensor2D;
}

/** `softmax(scores + bias)`: one threaded kernel each way in the addon (the output is all the gradient needs), else tfjs's. */
function maskedSoftmax(scores: tf.Tensor, bias: tf.Tensor): tf.Tensor {
  if (!nativeLayerOps()) return tf.softmax(addConstant(scores, bias));
  return customOp<[tf.Tensor]>((x, save) => {
    const y = maskedSoftmaxKernel(x, bias);
    save([y]);
    return { value: y, gradFunc: (dy, [ys]) => softmaxGradKernel(ys, dy) };
  })(scores);
}
