import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../backend';
import { useSharedWasmIdentity } from './wasm-identity';

describe('sharing wasm Identity', () => {
  beforeAll(async () => {
    await initBackend({ backend: 'wasm' });
  });
  afterAll(() => useSharedWasmIdentity(true));

  it('clones without copying, and each handle outlives the other', () => {
    const x = tf.tensor([1, 2, 3, 4], [2, 2]);
    const buffers = () => (tf.memory() as tf.MemoryInfo & { numDataBuffers: number }).numDataBuffers;
    const before = buffers();
    const y = tf.clone(x);
    expect(buffers()).toBe(before); // one backend buffer, two tensors
    x.dispose();
    expect(Array.from(y.dataSync())).toEqual([1, 2, 3, 4]);
    const z = tf.clone(y);
    y.dispose();
    expect(Array.from(z.dataSync())).toEqual([1, 2, 3, 4]);
    z.dispose();
    expect(buffers()).toBe(before - 1); // the buffer is freed with its last handle
  });

  it('keeps variables independent: assigning one leaves a clone of its old value alone', () => {
    const v = tf.variable(tf.tensor([1, 2]));
    const saved = tf.clone(v);
    v.assign(tf.tensor([5, 6]));
    expect(Array.from(saved.dataSync())).toEqual([1, 2]);
    expect(Array.from(v.dataSync())).toEqual([5, 6]);
    tf.dispose([v, saved]);
  });

  it('gives the same gradients as the copying Identity', () => {
    const x = tf.tensor([0.5, -1, 2]);
    const f = (t: tf.Tensor) => tf.sum(tf.mul(tf.mul(t, t), tf.add(t, 1))); // mul saves its inputs through clones
    const shared = tf.grad(f)(x);
    useSharedWasmIdentity(false);
    const copied = tf.grad(f)(x);
    useSharedWasmIdentity(true);
    expect(Array.from(shared.dataSync())).toEqual(Array.from(copied.dataSync()));
    tf.dispose([x, shared, copied]);
  });
});
