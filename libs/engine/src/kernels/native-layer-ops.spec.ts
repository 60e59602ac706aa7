import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../backend';
import { loadEngineAddon } from '../native/addon';
import { rmsNorm } from '../model/rms-norm';
import { applyRope, halfSwapMatrix, ropeTables } from '../model/rope';
import { swiglu } from '../model/swiglu';
import { groupedQueryAttention } from '../model/attention';
import { Prng } from '../util/prng';
import { maskedSoftmaxKernel, nativeLayerOps } from './native-layer-ops';

// The layer stages in the addon against the same formulas written as plain tfjs ops, values and
// gradients, on each backend that runs native kernels. Tolerances: 2e-6 absolute on values of order 1
// (float32 round-off of a different summation order), 1e-5 on gradients; SwiGLU's outputs (order 100
// here) 1e-6 relative to the largest.

const describeIfNative = loadEngineAddon().ok ? describe : describe.skip;

function random(shape: number[], seed: number, scale = 1): tf.Tensor {
  const rng = new Prng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, () => rng.normal() * scale),
    shape,
  );
}

function maxDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

/** Largest difference relative to the reference's largest magnitude. */
function relDiff(a: tf.Tensor, ref: tf.Tensor): number {
  return maxDiff(a, ref) / tf.tidy(() => tf.max(tf.abs(ref)).dataSync()[0]);
}

describe.each(['wasm', 'cpu'] as const)('native layer stages on %s', (backend) => {
  describeIfNative('against tfjs formulas', () => {
    beforeAll(async () => {
      await initBackend({ backend, threads: 2 });
      expect(nativeLayerOps()).toBe(true);
    });

    it('RMSNorm: value and gradients of x and w', () => {
      tf.tidy(() => {
        const x = random([37, 96], 1);
        const w = random([96], 2);
        const dy = random([37, 96], 3);
        const ref = (xs: tf.Tensor, ws: tf.Tensor) => tf.mul(tf.mul(xs, tf.rsqrt(tf.add(tf.mean(tf.square(xs), -1, true), 1e-6))), ws);
        expect(maxDiff(rmsNorm(x, w, 1e-6), ref(x, w))).toBeLessThan(2e-6);
        const [gx, gw] = tf.grads((a: tf.Tensor, b: tf.Tensor) => rmsNorm(a, b, 1e-6))([x, w], dy);
        const [rx, rw] = tf.grads(ref)([x, w], dy);
        expect(maxDiff(gx, rx)).toBeLessThan(1e-5);
        expect(maxDiff(gw, rw)).toBeLessThan(1e-5 * 37);
      });
    });

    it('SwiGLU: silu(g)·u and its gradients, over large and small gates', () => {
      tf.tidy(() => {
        const x = random([13, 24], 4);
        const wg = random([24, 70], 5, 3);
        const wu = random([24, 70], 6);
        const wd = random([70, 24], 7, 0.2);
        const ours = (a: tf.Tensor) =>
          swiglu(
            a as tf.Tensor2D,
            (h) => tf.matMul(h, wg),
            (h) => tf.matMul(h, wu),
            (h) => tf.matMul(h, wd),
          );
        const ref = (a: tf.Tensor) => {
          const g = tf.matMul(a as tf.Tensor2D, wg as tf.Tensor2D);
          return tf.matMul(tf.mul(tf.mul(g, tf.sigmoid(g)), tf.matMul(a as tf.Tensor2D, wu as tf.Tensor2D)), wd as tf.Tensor2D);
        };
        expect(relDiff(ours(x), ref(x))).toBeLessThan(1e-6);
        const dy = random([13, 24], 8);
        expect(relDiff(tf.grad(ours)(x, dy), tf.grad(ref)(x, dy))).toBeLessThan(1e-6);
      });
    });

    it('rotary positions: value and gradient (the transposed rotation)', () => {
      tf.tidy(() => {
        const [b, t, h, hd] = [2, 5, 3, 16];
        const positions = Int32Array.from({ length: b * t }, (_, i) => (i * 3) % 11);
        const { cos, sinSigned } = ropeTables(positions, hd, 10000);
        const c = tf.tensor4d(cos, [b, t, 1, hd]);
        const s = tf.tensor4d(sinSigned, [b, t, 1, hd]);
        const swap = tf.tensor2d(halfSwapMatrix(hd), [hd, hd]);
        const x = random([b, t, h, hd], 9);
        const ref = (a: tf.Tensor) => tf.add(tf.mul(a, c), tf.mul(tf.reshape(tf.matMul(tf.reshape(a, [-1, hd]), swap), a.shape), s));
        expect(maxDiff(applyRope(x, c, s, swap), ref(x))).toBeLessThan(2e-6);
        const dy = random([b, t, h, hd], 10);
        expect(maxDiff(tf.grad((a: tf.Tensor) => applyRope(a, c, s, swap))(x, dy), tf.grad(ref)(x, dy))).toBeLessThan(1e-5);
      });
    });

    it('attention softmax under a mask: probabilities exactly 0 where masked, and the gradient', () => {
      tf.tidy(() => {
        const [b, t, h, kv, hd, past] = [2, 4, 4, 2, 8, 3];
        const s = past + t;
        const q = random([b, t, h, hd], 11);
        const k = random([b, kv, s, hd], 12);
        const v = random([b, kv, s, hd], 13);
        const bias = new Float32Array(b * t * s);
        for (let r = 0; r < b; r++) for (let i = 0; i < t; i++) for (let j = 0; j < s; j++) if (j > past + i || (r === 1 && j === 0)) bias[(r * t + i) * s + j] = -1e9;
        const m = tf.tensor(bias, [b, 1, 1, t, s]);
        const ref = (qs: tf.Tensor) => {
          const g = h / kv;
          const qg = tf.reshape(tf.transpose(tf.reshape(qs, [b, t, kv, g, hd]), [0, 2, 3, 1, 4]), [b, kv, g * t, hd]);
          const scores = tf.reshape(tf.matMul(qg, k, false, true), [b, kv, g, t, s]);
          const probs = tf.reshape(tf.softmax(tf.add(scores, m)), [b, kv, g * t, s]);
          const out = tf.reshape(tf.matMul(probs, v), [b, kv, g, t, hd]);
          return tf.reshape(tf.transpose(out, [0, 3, 1, 2, 4]), [b * t, h * hd]);
        };
        expect(maxDiff(groupedQueryAttention(q, k, v, m), ref(q))).toBeLessThan(2e-6);
        // Exactly 0, not e^-87: a tiny probability would make the next product run on denormals.
        const probs = maskedSoftmaxKernel(random([b, kv, 2, t, s], 15, 5), m).dataSync();
        for (let i = 0; i < probs.length; i++) if (bias[(Math.floor(i / (kv * 2 * t * s)) * t + (Math.floor(i / s) % t)) * s + (i % s)] < 0) expect(probs[i]).toBe(0);
        const dy = random([b * t, h * hd], 14);
        expect(maxDiff(tf.grad((a: tf.Tensor) => groupedQueryAttention(a, k, v, m))(q, dy), tf.grad(ref)(q, dy))).toBeLessThan(1e-5);
      });
    });
  });
});
