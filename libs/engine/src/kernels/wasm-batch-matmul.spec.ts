import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../backend';
import { maxAbsDiff } from '../testing/backends';
import { Prng } from '../util/prng';
import { loadEngineAddon } from '../native/addon';
import { type WasmMatMul, useWasmMatMul, wasmMatMul } from './wasm-batch-matmul';

function random(shape: number[], seed: number): tf.Tensor {
  const rng = new Prng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, () => rng.normal()),
    shape,
  );
}

/** [aShape, bShape, transposeA, transposeB] */
const cases: Array<[number[], number[], boolean, boolean]> = [
  [[64, 48], [48, 40], false, false], // 2-D plain: stock path
  [[48, 64], [48, 40], true, false], // weight-gradient form
  [[64, 48], [40, 48], false, true], // tied output head form
  [[48, 64], [40, 48], true, true],
  [[3, 64, 32], [3, 32, 64], false, false], // batched attention forms
  [[2, 3, 64, 32], [2, 3, 64, 32], false, true],
  [[2, 3, 64, 64], [2, 3, 64, 32], true, false],
  [[2, 32, 64], [2, 48, 32], true, true],
  [[1, 64, 32], [4, 32, 64], false, false], // broadcast batch
  [[4, 64, 32], [32, 64], false, false],
  [[5, 1, 32], [5, 40, 32], false, true], // tiny slices: stock path
];

// CI installs a compiler (.ci/run), so there the native kernel must be what runs; elsewhere its cases
// still run, through its xnnpack fallback.
const nativeExpected = process.env.CI === 'true';
const kernels: WasmMatMul[] = ['native', 'xnnpack'];

describe('faster wasm BatchMatMul kernels', () => {
  let defaultKernel: WasmMatMul | undefined;
  beforeAll(async () => {
    const info = await initBackend({ backend: 'wasm' });
    defaultKernel = info.matmul;
    if (nativeExpected) expect(info.native).toMatchObject({ ok: true });
    expect(info.matmul).toBe(loadEngineAddon().ok ? 'native' : 'xnnpack');
  });
  afterAll(() => useWasmMatMul(defaultKernel!));

  it.each(kernels.flatMap((kernel) => cases.map((c) => [kernel, ...c] as const)))('%s matches the stock kernel: %j × %j (tA=%s, tB=%s)', (kernel, aShape, bShape, ta, tb) => {
    const a = random(aShape, 1);
    const b = random(bShape, 2);
    useWasmMatMul('stock');
    const expected = tf.tidy(() => tf.matMul(a, b, ta, tb));
    useWasmMatMul(kernel);
    const before = tf.memory().numTensors;
    const got = tf.matMul(a, b, ta, tb);
    expect(got.shape).toEqual(expected.shape);
    expect(maxAbsDiff(got.dataSync(), expected.dataSync())).toBeLessThan(1e-4);
    got.dispose();
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([a, b, expected]);
  });

  it('can be switched between kernels', () => {
    expect(useWasmMatMul('stock')).toBe('stock');
    expect(wasmMatMul()).toBe('stock');
    expect(useWasmMatMul('xnnpack')).toBe('xnnpack');
    expect(wasmMatMul()).toBe('xnnpack');
    expect(useWasmMatMul('native')).toBe(loadEngineAddon().ok ? 'native' : 'xnnpack');
  });

  it('refuses an unknown kernel name', async () => {
    await expect(initBackend({ backend: 'wasm', matmul: 'fortran' as WasmMatMul })).rejects.toMatchObject({ code: 'ENGINE_INVALID_OPTIONS', field: 'matmul' });
  });

  it.each(kernels)('%s frees its temporaries: heap use is flat over repeated calls', (kernel) => {
    useWasmMatMul(kernel);
    const a = random([4, 64, 48], 3);
    const b = random([4, 40, 48], 4);
    const run = () => tf.tidy(() => void tf.matMul(a, b, false, true));
    run();
    const before = tf.memory() as tf.MemoryInfo & { numDataBuffers: number };
    for (let i = 0; i < 20; i++) run();
    const after = tf.memory() as tf.MemoryInfo & { numDataBuffers: number };
    expect(after.numBytes).toBe(before.numBytes);
    expect(after.numDataBuffers).toBe(before.numDataBuffers); // backend-side buffers: views and transposes released
    tf.dispose([a, b]);
  });
});
