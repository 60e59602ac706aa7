import * as tf from '@tensorflow/tfjs-core';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { Prng } from '../util/prng';

function randomTensor(shape: number[], seed: number, positive = false): tf.Tensor {
  const rng = new Prng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = positive ? 0.5 + rng.uniform() : rng.normal();
  return tf.tensor(v, shape);
}

/**
 * Checks tf.grad of `sum(w · f(x))` against central finite differences, for each input.
 * Wrong gradient formulas give O(1) errors; float32 round-off with eps 1e-2 stays near 1e-3.
 */
function checkGrad(f: (...xs: tf.Tensor[]) => tf.Tensor, inputs: tf.Tensor[], tol = 3e-3): void {
  const out = tf.tidy(() => f(...inputs));
  const w = randomTensor(out.shape, 99);
  out.dispose();
  const loss = (...xs: tf.Tensor[]) => tf.sum(tf.mul(f(...xs), w)) as tf.Scalar;
  const grads = tf.grads(loss)(inputs);
  inputs.forEach((x, k) => {
    const analytic = grads[k].dataSync();
    const base = x.dataSync();
    const numeric = new Float32Array(base.length);
    const eps = 1e-2;
    for (let i = 0; i < base.length; i++) {
      const at = (delta: number) =>
        tf.tidy(() => {
          const v = Float32Array.from(base);
          v[i] += delta;
          const xs = inputs.map((t, j) => (j === k ? tf.tensor(v, x.shape) : t));
          return loss(...xs).dataSync()[0];
        });
      numeric[i] = (at(eps) - at(-eps)) / (2 * eps);
    }
    const scale = Math.max(1, ...Array.from(numeric, Math.abs));
    expect(maxAbsDiff(analytic, numeric) / scale).toBeLessThan(tol);
  });
  grads.forEach((g) => g.dispose());
  w.dispose();
}

describe.each(TEST_BACKENDS)('engine gradients on %s', (backend) => {
  useBackend(backend);

  it('broadcasting binary ops reduce to each input shape', () => {
    const a = randomTensor([2, 3, 4], 1);
    const b = randomTensor([3, 1], 2);
    const p = randomTensor([1, 4], 3, true);
    checkGrad((x, y) => tf.add(x, y), [a, b]);
    checkGrad((x, y) => tf.sub(x, y), [a, b]);
    checkGrad((x, y) => tf.mul(x, y), [a, b]);
    checkGrad((x, y) => tf.div(x, y), [a, p]);
    checkGrad((x, y) => tf.addN([x, y, x]), [b, randomTensor([3, 1], 12)]);
  });

  it('unary ops', () => {
    const x = randomTensor([3, 4], 4);
    const pos = randomTensor([3, 4], 5, true);
    checkGrad((t) => tf.neg(t), [x]);
    checkGrad((t) => tf.square(t), [x]);
    checkGrad((t) => tf.sqrt(t), [pos]);
    checkGrad((t) => tf.rsqrt(t), [pos]);
    checkGrad((t) => tf.exp(t), [x]);
    checkGrad((t) => tf.log(t), [pos]);
    checkGrad((t) => tf.sigmoid(t), [x]);
  });

  it('reductions, reshapes and permutations', () => {
    const x = randomTensor([2, 3, 4], 6);
    checkGrad((t) => tf.sum(t, [1], true), [x]);
    checkGrad((t) => tf.mean(t, -1, true), [x]);
    checkGrad((t) => tf.reshape(t, [6, 4]), [x]);
    checkGrad((t) => tf.transpose(t, [2, 0, 1]), [x]);
    checkGrad((t) => tf.reverse(t, [1]), [x]);
    checkGrad((t) => tf.softmax(t), [x]);
    checkGrad((t) => tf.logSoftmax(t), [x]);
  });

  it('matmul in all four transpose forms, batched', () => {
    const a = randomTensor([2, 3, 4], 7);
    const b = randomTensor([2, 4, 5], 8);
    const at = randomTensor([2, 4, 3], 9);
    const bt = randomTensor([2, 5, 4], 10);
    checkGrad((x, y) => tf.matMul(x, y), [a, b]);
    checkGrad((x, y) => tf.matMul(x, y, false, true), [a, bt]);
    checkGrad((x, y) => tf.matMul(x, y, true, false), [at, b]);
    checkGrad((x, y) => tf.matMul(x, y, true, true), [at, bt]);
  });

  it('concatenation splits dy back, and a tile sums the repetitions', () => {
    const a = randomTensor([2, 1, 3, 2], 13);
    const b = randomTensor([2, 1, 4, 2], 14);
    checkGrad((x, y) => tf.concat([x, y], 2), [a, b]);
    checkGrad((x, y) => tf.concat([y, x, y], 2), [a, b]);
    checkGrad((x) => tf.tile(x, [3, 1, 2, 1]), [a]);
    checkGrad((x) => tf.tile(x, [1, 2, 1, 3]), [randomTensor([1, 2, 3, 2], 15)]);
  });

  it('gather along axis 0 scatters rows back, repeated ids summed', () => {
    const table = randomTensor([5, 3], 11);
    const ids = tf.tensor1d([4, 0, 4, 2], 'int32');
    checkGrad((t) => tf.gather(t, ids), [table]);
    const g = tf.grad((t: tf.Tensor) => tf.sum(tf.gather(t, ids)))(table);
    expect(Array.from(g.dataSync())).toEqual([1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2]);
  });
});
