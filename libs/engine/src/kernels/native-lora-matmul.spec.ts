import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../backend';
import { loadEngineAddon } from '../native/addon';
import { NativeTensor } from '../native/native-tensor';
import { Prng } from '../util/prng';
import { nativeLoraMatMul } from './native-matmul';

// `x · Wᵀ + (x · A) · b` in one native kernel against the same sum as plain tfjs ops on the weight's
// float32 values: outputs, and the gradients of x, A and b of a weighted sum, on each backend that runs
// native kernels, with float32 and bf16 weights (the reference reads the bf16 weight's rounded values).
// Tolerances: 1e-5 relative to the reference's largest magnitude (float32 round-off of another
// summation order).

const describeIfNative = loadEngineAddon().ok ? describe : describe.skip;

function values(n: number, seed: number, scale = 1): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: n }, () => rng.normal() * scale);
}

function relDiff(a: tf.Tensor, ref: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, ref))).dataSync()[0] / tf.max(tf.abs(ref)).dataSync()[0]);
}

describe.each(['wasm', 'cpu'] as const)('the native LoRA product on %s', (backend) => {
  describeIfNative('against tfjs ops', () => {
    beforeAll(async () => {
      await initBackend({ backend, threads: 2 });
    });

    it.each(['F32', 'BF16'] as const)('gives the same output and gradients of x, A and b with %s weights', (dtype) => {
      const [m, k, n, r] = [37, 70, 90, 4];
      const w = NativeTensor.fromFloat32(values(n * k, 1, 0.3), [n, k], dtype);
      const wRef = tf.tensor2d(w.toFloat32(), [n, k]);
      const x = tf.tensor2d(values(m * k, 2), [m, k]);
      const A = tf.tensor2d(values(k * r, 3, 0.2), [k, r]);
      const b = tf.tensor2d(values(r * n, 4, 0.2), [r, n]);
      const weights = tf.tensor2d(values(m * n, 5), [m, n]);
      const fused = (xs: tf.Tensor, As: tf.Tensor, bs: tf.Tensor) => nativeLoraMatMul(xs, w, tf.matMul(xs, As), bs);
      const plain = (xs: tf.Tensor, As: tf.Tensor, bs: tf.Tensor) => tf.add(tf.matMul(xs, wRef, false, true), tf.matMul(tf.matMul(xs, As), bs));
      const [y, yRef] = [fused(x, A, b), plain(x, A, b)];
      expect(y.shape).toEqual([m, n]);
      expect(relDiff(y, yRef)).toBeLessThan(1e-5);
      const grads = (f: typeof plain) => tf.grads((xs: tf.Tensor, As: tf.Tensor, bs: tf.Tensor) => tf.sum(tf.mul(f(xs, As, bs), weights)))([x, A, b]);
      const [g, gRef] = [grads(fused), grads(plain)];
      g.forEach((gi, i) => expect(relDiff(gi, gRef[i])).toBeLessThan(1e-5));
      const before = tf.memory().numTensors;
      tf.tidy(() => {
        fused(x, A, b);
      });
      expect(tf.memory().numTensors).toBe(before);
      tf.dispose([wRef, x, A, b, weights, y, yRef, ...g, ...gRef]);
      w.dispose();
    });

    it('refuses operands that do not meet the weight', () => {
      const w = NativeTensor.fromFloat32(values(6, 1), [3, 2], 'F32');
      const x = tf.zeros([4, 2]);
      expect(() => nativeLoraMatMul(x, w, tf.zeros([4, 2]), tf.zeros([2, 4]))).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT', field: 'x' }));
      expect(() => nativeLoraMatMul(x, w, tf.zeros([3, 2]), tf.zeros([2, 3]))).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT' }));
      w.dispose();
    });
  });
});
