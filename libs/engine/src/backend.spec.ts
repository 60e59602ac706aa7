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

  it('reads a variable only for an option not given, and none with env: false', async () => {
    process.env.OPENTINKER_ENGINE_BACKEND = 'tensorflow'; // not installed here: starting it would fail
    expect((await initBackend({ backend: 'cpu' })).name).toBe('cpu');
    expect((await initBackend({ env: false })).name).toBe('wasm');
    expect((await initBackend({ env: { OPENTINKER_ENGINE_BACKEND: 'cpu' } })).name).toBe('cpu');
    process.env.OPENTINKER_ENGINE_BACKEND = 'gpu';
    await expect(initBackend()).rejects.toMatchObject({ code: 'ENGINE_INVALID_OPTIONS', field: 'engine_backend' });
    expect((await initBackend({ backend: 'wasm' })).name).toBe('wasm');
  });

  it('fails with a code when the requested backend cannot start or is unknown', async () => {
    await expect(initBackend({ backend: 'tensorflow' })).rejects.toMatchObject({ code: 'ENGINE_BACKEND_UNAVAILABLE' });
    const err = await initBackend({ backend: 'gpu' as never }).catch((e: unknown) => e);
    expect(isEngineError(err) && err.code).toBe('ENGINE_INVALID_OPTIONS');
    expect(err).toMatchObject({ field: 'backend', message: expect.stringMatching(/^backend must be one of auto, tensorflow, wasm, cpu/) });
  });

  it('registers the kernels wasm lacks and the gradients the model needs', async () => {
    await initBackend({ backend: 'wasm' });
    expect(tf.getKernel('UnsortedSegmentSum', 'wasm')).toBeDefined();
    for (const k of ['BatchMatMul', 'GatherV2', 'Softmax', 'Rsqrt', 'Sigmoid', 'Reverse', 'Transpose']) expect(tf.getGradient(k)).toBeDefined();
  });

  it('reports the native addon, and which device its products run on and why not the GPU', async () => {
    const visible = process.env.CUDA_VISIBLE_DEVICES;
    try {
      process.env.CUDA_VISIBLE_DEVICES = '';
      const info = await initBackend({ backend: 'wasm' });
      if (process.env.CI === 'true') expect(info.native).toMatchObject({ ok: true, kernel: expect.stringMatching(/^(avx512|avx2|generic)$/) });
      expect(info.cuda).toEqual({ ok: false, error: expect.stringContaining('CUDA_VISIBLE_DEVICES is empty') });
      expect((await initBackend({ backend: 'wasm', device: 'cpu' })).cuda).toMatchObject({ ok: false, error: 'OPENTINKER_ENGINE_DEVICE=cpu' });
      // These machines have no CUDA: insisting on it fails with the reason (the library or the device).
      process.env.CUDA_VISIBLE_DEVICES = '0';
      const err = await initBackend({ backend: 'wasm', device: 'cuda' }).catch((e: unknown) => e);
      if (info.native.ok)
        expect(err).toMatchObject({ code: 'ENGINE_BACKEND_UNAVAILABLE', field: 'device', message: expect.stringMatching(/CUDA did not open: (libcudart|no CUDA device)/) });
      expect(await initBackend({ backend: 'wasm', device: 'bogus' as never }).catch((e: unknown) => e)).toMatchObject({ code: 'ENGINE_INVALID_OPTIONS', field: 'device' });
    } finally {
      if (visible === undefined) delete process.env.CUDA_VISIBLE_DEVICES;
      else process.env.CUDA_VISIBLE_DEVICES = visible;
      await initBackend({ backend: 'wasm', device: 'cpu' });
    }
  });
});
