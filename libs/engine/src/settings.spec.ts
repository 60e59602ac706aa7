import { ENGINE_SETTINGS, engineBackendOptions, engineSettingsFromEnv, parseEngineSetting } from './settings';

describe('engine settings', () => {
  it('name each variable after its key', () => {
    for (const def of ENGINE_SETTINGS) expect(def.env).toBe(`OPENTINKER_${def.key.toUpperCase()}`);
  });

  it('read the environment with defaults for what is unset', () => {
    expect(engineSettingsFromEnv({})).toEqual({ engine_backend: 'auto', engine_matmul: 'native', engine_device: 'auto' });
    expect(engineSettingsFromEnv({ OPENTINKER_ENGINE_THREADS: '6', OPENTINKER_ENGINE_BACKEND: 'cpu', OPENTINKER_ENGINE_MEMORY_MB: '' })).toEqual({
      engine_backend: 'cpu',
      engine_matmul: 'native',
      engine_threads: 6,
      engine_device: 'auto',
    });
  });

  it.each([
    ['engine_backend', 'gpu'],
    ['engine_matmul', 'blas'],
    ['engine_threads', '0'],
    ['engine_threads', '2.5'],
    ['engine_memory_mb', '63'],
    ['engine_memory_mb', '5000'],
    ['engine_device', 'tpu'],
  ] as const)('refuse %s=%s naming the key', (key, value) => {
    expect(() => parseEngineSetting(key, value)).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_OPTIONS', field: key }));
  });

  it('become initBackend options that read no environment', () => {
    expect(engineBackendOptions({ engine_backend: 'wasm', engine_matmul: 'xnnpack', engine_threads: 2, engine_memory_mb: 100, engine_device: 'cpu' })).toEqual({
      backend: 'wasm',
      matmul: 'xnnpack',
      threads: 2,
      memoryBytes: 100 * 1024 * 1024,
      device: 'cpu',
      env: false,
    });
  });
});
