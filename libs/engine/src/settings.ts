// Entry point `@opentinker/engine/settings`, free of TensorFlow.js: the engine's settings as plain data
// (names, types, defaults, docs) with the one validator that reads them. A host (the OpenTinker server)
// composes these definitions into its own settings schema and passes the values to `initBackend`; a
// standalone user sets the `OPENTINKER_ENGINE_*` variables, which `initBackend` reads through
// `engineSettingsFromEnv` for every option it is not given.
import type { InitBackendOptions } from './backend';

export type { InitBackendOptions };
import { EngineError } from './errors';

/** The values of the engine's settings; an absent optional one means "the engine decides" (see its doc). */
export interface EngineSettings {
  engine_backend: 'auto' | 'tensorflow' | 'wasm' | 'cpu';
  engine_matmul: 'native' | 'xnnpack' | 'stock';
  engine_threads?: number;
  engine_memory_mb?: number;
  engine_device: 'auto' | 'cuda' | 'cpu';
}

export type EngineSettingKey = keyof EngineSettings;

/** One setting: its key (`OPENTINKER_<KEY>` in the environment), type, default and meaning. */
export type EngineSettingDefinition = {
  key: EngineSettingKey;
  /** The environment variable: `OPENTINKER_` and the key in upper case. */
  env: string;
  /** What the default is, in words, where it depends on the machine (`null` default). */
  defaultText?: string;
  /** Markdown: what the setting does. */
  doc: string;
} & ({ type: 'enum'; values: readonly string[]; default: string } | { type: 'integer'; min: number; max: number; default: null });

/** The engine's settings, in the order the docs list them. */
export const ENGINE_SETTINGS: readonly EngineSettingDefinition[] = [
  {
    key: 'engine_backend',
    env: 'OPENTINKER_ENGINE_BACKEND',
    type: 'enum',
    values: ['auto', 'tensorflow', 'wasm', 'cpu'],
    default: 'auto',
    doc:
      'TensorFlow.js backend of the engine. `auto`: the first that starts among `tensorflow` (when `@tensorflow/tfjs-node-gpu` or ' +
      '`@tensorflow/tfjs-node` is installed), `wasm` (SIMD, loaded offline from node_modules) and `cpu` (pure JavaScript, a reference for ' +
      'tests); naming one uses only that one and fails if it cannot start.',
  },
  {
    key: 'engine_matmul',
    env: 'OPENTINKER_ENGINE_MATMUL',
    type: 'enum',
    values: ['native', 'xnnpack', 'stock'],
    default: 'native',
    doc:
      "On `wasm`, the `BatchMatMul` kernel: `native` (the engine's own matrix product in its addon; `xnnpack` where the addon is " +
      "missing), `xnnpack` (transposes materialised, batches cut into 2-D XNNPACK products) or `stock` (TensorFlow.js's own).",
  },
  {
    key: 'engine_threads',
    env: 'OPENTINKER_ENGINE_THREADS',
    type: 'integer',
    min: 1,
    max: 1024,
    default: null,
    defaultText: "a job's CPU slots (elsewhere: the cores the process may use)",
    doc: "Threads of the native addon's matrix product in each job runner and model server.",
  },
  {
    key: 'engine_memory_mb',
    env: 'OPENTINKER_ENGINE_MEMORY_MB',
    type: 'integer',
    min: 64,
    max: 4096,
    default: null,
    defaultText: "the wasm heap's 4 GiB less a reserve",
    doc:
      'MiB of tensors the wasm heap may hold (activations, trainable weights, optimizer state). Micro-batches and recomputation are ' +
      'sized from it, and an allocation past it is refused with `ENGINE_OUT_OF_MEMORY` before it is made.',
  },
  {
    key: 'engine_device',
    env: 'OPENTINKER_ENGINE_DEVICE',
    type: 'enum',
    values: ['auto', 'cuda', 'cpu'],
    default: 'auto',
    doc:
      'Where products with native weights run: `auto` on the GPU when the process was given one (`CUDA_VISIBLE_DEVICES`) and CUDA ' +
      'opens, `cuda` requires it (the backend fails to start otherwise), `cpu` never uses it.',
  },
];

/**
 * Checks one raw value (a string from the environment or a config file, or a number) against its
 * definition; `undefined` gives the default. A bad value throws `ENGINE_INVALID_OPTIONS` naming the key.
 *
 * @example
 * ```ts
 * parseEngineSetting('engine_threads', '4'); // 4
 * parseEngineSetting('engine_backend', undefined); // 'auto'
 * ```
 */
export function parseEngineSetting<K extends EngineSettingKey>(key: K, raw: unknown): EngineSettings[K] {
  const def = ENGINE_SETTINGS.find((d) => d.key === key);
  if (!def) throw new EngineError('ENGINE_INVALID_OPTIONS', `unknown engine setting ${key}`, key);
  if (raw === undefined || raw === null || raw === '') return (def.default ?? undefined) as EngineSettings[K];
  if (def.type === 'enum') {
    if (typeof raw !== 'string' || !def.values.includes(raw)) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', `${key} must be one of ${def.values.join(', ')}, got ${JSON.stringify(raw)}`, key);
    }
    return raw as EngineSettings[K];
  }
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < def.min || n > def.max) {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `${key} must be an integer from ${def.min} to ${def.max}, got ${JSON.stringify(raw)}`, key);
  }
  return n as EngineSettings[K];
}

/** Every engine setting from `OPENTINKER_ENGINE_*` variables (defaults for those unset), validated. */
export function engineSettingsFromEnv(env: Record<string, string | undefined> = process.env): EngineSettings {
  const out: Partial<Record<EngineSettingKey, unknown>> = {};
  for (const def of ENGINE_SETTINGS) {
    const value = parseEngineSetting(def.key, env[def.env]);
    if (value !== undefined) out[def.key] = value;
  }
  return out as unknown as EngineSettings;
}

/**
 * `initBackend` options that apply exactly these settings, without reading the environment.
 *
 * @example
 * ```ts
 * await initBackend(engineBackendOptions({ ...engineSettingsFromEnv({}), engine_threads: 2 }));
 * ```
 */
export function engineBackendOptions(settings: EngineSettings): InitBackendOptions {
  return {
    backend: settings.engine_backend,
    matmul: settings.engine_matmul,
    threads: settings.engine_threads,
    memoryBytes: settings.engine_memory_mb === undefined ? undefined : settings.engine_memory_mb * 1024 * 1024,
    device: settings.engine_device,
    env: false,
  };
}
