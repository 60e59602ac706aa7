import * as tf from '@tensorflow/tfjs-core';
import { currentBackend, initBackend } from './backend';
import { isEngineError } from './errors';

describe('initBackend', () => {
  afterEach(() => {
    delete process.env.OPENTINKER_ENGINE_BACKEND;
  });

  it('falls back to wasm (SIMD) when tfjs-node is not installed, saying why', async () => {
    const info = await initBackend();
    expect(info.name).toBe('wasm');
    expect(info.simd).toBe(true);
    expect(info.skipped).toEqual([{ name: 'tensorflow', reason: expect.stringContaining('not installed') }]);
    expect(tf.getBackend()).toBe('wasm');
    expect(currentBackend()).toBe(info);
  });

  it('honours an explicit choice and the environment variable', async () => {
    expect((await initBackend({ backend: 'cpu' })).name).toBe('cpu');
    process.env.OPENTINKER_ENGINE_BACKEND = 'wasm';
    expect((await initBackend()).name).toBe('wasm');
  });

  it('fails with a code when the requested backend cannot start or is unknown', async () => {
    await expect(initBackend({ backend: 'tensorflow' })).rejects.toMatchObject({ code: 'ENGINE_BACKEND_UNAVAILABLE' });
    const err = await initBackend({ backend: 'gpu' as never }).catch((e: unknown) => e);
    expect(isEngineError(err) && err.code).toBe('ENGINE_INVALID_OPTIONS');
  });

  it('registers the kernels wasm lacks and the gradients the model needs', async () => {
    await initBackend({ backend: 'wasm' });
    expect(tf.getKernel('UnsortedSegmentSum', 'wasm')).toBeDefined();
    for (const k of ['BatchMatMul', 'GatherV2', 'Softmax', 'Rsqrt', 'Sigmoid', 'Reverse', 'Transpose']) expect(tf.getGradient(k)).toBeDefined();
  });
});
