import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EngineError, isEngineError } from './errors';
import { parseEngineSetting, type EngineSettingKey, type EngineSettings } from './settings';
import { registerEngineGradients } from './kernels/gradients';
import { type WasmMatMul, useWasmMatMul } from './kernels/wasm-batch-matmul';
import { useSharedWasmIdentity } from './kernels/wasm-identity';
import { registerWasmMissingKernels } from './kernels/wasm-missing-kernels';
import { watchWasmHeap } from './kernels/wasm-heap';
import { loadEngineAddon, openCuda, setNativeThreads, type CudaStatus, type NativeStatus } from './native/addon';

/** The TensorFlow.js backends the engine knows, fastest first. */
export type BackendName = 'tensorflow' | 'wasm' | 'cpu';

/** Which backend runs, and why the faster ones do not. */
export interface BackendInfo {
  /** The backend now active. */
  name: BackendName;
  /** For `tensorflow`: the npm package that provided it (`@tensorflow/tfjs-node-gpu` or `@tensorflow/tfjs-node`). */
  package?: string;
  /** For `wasm`: whether the SIMD build runs. */
  simd?: boolean;
  /** For `wasm`: whether multi-threading is on (tfjs turns it off under Node). */
  threads?: boolean;
  /** For `wasm`: which BatchMatMul kernel runs (see `useWasmMatMul`). */
  matmul?: WasmMatMul;
  /**
   * The engine's native addon (its matrix product, weights outside the wasm heap, the fused head): the
   * kernel this CPU runs and its threads, or why it is not loaded. Used on the wasm and cpu backends.
   */
  native: NativeStatus;
  /** Whether products with native weights run on an NVIDIA GPU through cuBLAS, and if not, why. */
  cuda?: CudaStatus;
  /** Backends tried before this one and why each was passed over. */
  skipped: Array<{ name: BackendName; reason: string }>;
}

/**
 * Options of {@link initBackend}: the engine's settings (`ENGINE_SETTINGS` in `./settings`, where each
 * is documented). An option not given is read from its `OPENTINKER_ENGINE_*` variable in `env`, else
 * takes its default; a host that resolved the settings itself passes them all with `env: false`.
 */
export interface InitBackendOptions {
  /**
   * Use only this backend (fail if it cannot start) instead of the first that starts among
   * tensorflow → wasm → cpu (`auto`, the default). Setting `engine_backend`.
   */
  backend?: BackendName | 'auto';
  /**
   * On wasm, the BatchMatMul kernel: `native` (the default: the engine's own product in its addon,
   * `xnnpack` where the addon is missing, `BackendInfo.native.error` says why), `xnnpack` or `stock`.
   * Setting `engine_matmul`.
   */
  matmul?: WasmMatMul;
  /** Threads of the addon's matrix product (default: the cores this process may use). Setting `engine_threads`. */
  threads?: number;
  /**
   * Most bytes of tensors the wasm heap may hold (activations, trainable weights, optimizer state);
   * default the heap's 4 GiB less a reserve. Micro-batches and recomputation are sized from it, and an
   * allocation past it is refused with `ENGINE_OUT_OF_MEMORY`. Setting `engine_memory_mb` (in MiB).
   */
  memoryBytes?: number;
  /**
   * `auto` (default): products with native weights run on the GPU when the process was given one
   * (`CUDA_VISIBLE_DEVICES`) and CUDA opens; `cuda` requires it; `cpu` never. Setting `engine_device`.
   */
  device?: 'auto' | 'cuda' | 'cpu';
  /** Where options not given are read from (default `process.env`); `false`: nowhere, defaults apply. */
  env?: Record<string, string | undefined> | false;
}

// `require` exists in the CommonJS build; under Jest's ESM mode it does not, and the working directory
// (the repository root there) resolves the same node_modules.
const nodeRequire: NodeJS.Require = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'package.json'));

const TENSORFLOW_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'];

let wasmPathsSet = false;

function mib(n: number | undefined): number | undefined {
  return n === undefined ? undefined : n * 1024 * 1024;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0] : String(e);
}

async function tryTensorflow(skipped: BackendInfo['skipped']): Promise<BackendInfo | undefined> {
  const native: NativeStatus = { ok: false, error: 'the tensorflow backend keeps every tensor in TensorFlow' };
  for (const pkg of TENSORFLOW_PACKAGES) {
    try {
      nodeRequire.resolve(pkg);
    } catch {
      continue; // not installed: the common case, not worth a line in `skipped` per package
    }
    try {
      // Loaded lazily: these are optional peers that a GPU host installs; requiring them registers
      // the `tensorflow` backend (and, through @tensorflow/tfjs, all gradients).
      nodeRequire(pkg);
      if (await tf.setBackend('tensorflow')) return { name: 'tensorflow', package: pkg, native, skipped };
      skipped.push({ name: 'tensorflow', reason: `${pkg} loaded but its backend did not start` });
    } catch (e) {
      skipped.push({ name: 'tensorflow', reason: `${pkg}: ${errorText(e)}` });
    }
  }
  if (!skipped.some((s) => s.name === 'tensorflow')) {
    skipped.push({ name: 'tensorflow', reason: 'not installed (neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node)' });
  }
  return undefined;
}

async function tryWasm(skipped: BackendInfo['skipped'], options: InitBackendOptions): Promise<BackendInfo | undefined> {
  try {
    if (!wasmPathsSet) {
      // Point the loader at the .wasm files in node_modules so it never fetches from a CDN.
      const dir = join(dirname(nodeRequire.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist');
      setWasmPaths(dir + '/');
      wasmPathsSet = true;
    }
    registerWasmMissingKernels();
    if (!(await tf.setBackend('wasm'))) {
      skipped.push({ name: 'wasm', reason: 'the wasm backend did not start' });
      return undefined;
    }
    const simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
    const threads = Boolean(await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'));
    useSharedWasmIdentity(true);
    watchWasmHeap((tf.backend() as unknown as { wasm: Parameters<typeof watchWasmHeap>[0] }).wasm, options.memoryBytes);
    const matmul = useWasmMatMul(options.matmul ?? 'native');
    return { name: 'wasm', simd, threads, matmul, native: loadEngineAddon(), skipped };
  } catch (e) {
    skipped.push({ name: 'wasm', reason: errorText(e) });
    return undefined;
  }
}

async function tryCpu(skipped: BackendInfo['skipped']): Promise<BackendInfo | undefined> {
  try {
    if (await tf.setBackend('cpu')) return { name: 'cpu', native: loadEngineAddon(), skipped };
    skipped.push({ name: 'cpu', reason: 'the cpu backend did not start' });
  } catch (e) {
    skipped.push({ name: 'cpu', reason: errorText(e) });
  }
  return undefined;
}

let current: BackendInfo | undefined;

/**
 * Chooses and starts the TensorFlow.js backend: `tensorflow` (through `@tensorflow/tfjs-node-gpu` or
 * `@tensorflow/tfjs-node`, when a host has installed them), else `wasm` (SIMD, loaded offline from
 * node_modules), else `cpu` (pure JavaScript, slow: a reference for tests). Registers the gradients and
 * the wasm kernels the engine needs. Call it once before building models; calling it again switches
 * backends (tensors already made move over on first use).
 *
 * @example
 * ```ts
 * const info = await initBackend();
 * console.log(`engine backend: ${info.name}`, info.skipped); // "engine backend: wasm" on a machine without tfjs-node
 * await initBackend({ backend: 'cpu' }); // the reference backend, e.g. in a test
 * ```
 */
export async function initBackend(options: InitBackendOptions = {}): Promise<BackendInfo> {
  const env = options.env === false ? {} : (options.env ?? process.env);
  // An option given wins; one not given comes from its OPENTINKER_ENGINE_* variable, else its default.
  const setting = <K extends EngineSettingKey>(key: K, given: unknown, field: string): EngineSettings[K] => {
    try {
      return parseEngineSetting(key, given !== undefined ? given : env[`OPENTINKER_${key.toUpperCase()}`]);
    } catch (e) {
      throw given !== undefined && isEngineError(e) ? new EngineError(e.code, e.message.replace(key, field), field) : e;
    }
  };
  const backend = setting('engine_backend', options.backend, 'backend');
  const wanted = backend === 'auto' ? undefined : backend;
  const matmul = setting('engine_matmul', options.matmul, 'matmul');
  const threadSetting = setting('engine_threads', options.threads, 'threads');
  const memoryBytes = options.memoryBytes ?? mib(setting('engine_memory_mb', undefined, 'memory'));
  const device = setting('engine_device', options.device, 'device');
  options = { ...options, device, matmul, memoryBytes };
  // Loaded before any backend so that a thread count applies from the first product.
  loadEngineAddon(threadSetting);
  if (threadSetting !== undefined) setNativeThreads(threadSetting);
  registerEngineGradients();
  // The engine reports its backend itself; PROD silences tfjs's "install tfjs-node" banner.
  tf.env().set('PROD', true);
  const skipped: BackendInfo['skipped'] = [];
  const order: Array<[BackendName, (s: BackendInfo['skipped'], o: InitBackendOptions) => Promise<BackendInfo | undefined>]> = [
    ['tensorflow', tryTensorflow],
    ['wasm', tryWasm],
    ['cpu', tryCpu],
  ];
  for (const [name, attempt] of order) {
    if (wanted && name !== wanted) continue;
    const info = await attempt(skipped, options);
    if (info) {
      if (info.name !== 'tensorflow') {
        info.cuda = openCuda(options.device ?? 'auto');
        if (options.device === 'cuda' && !info.cuda.ok) {
          throw new EngineError('ENGINE_BACKEND_UNAVAILABLE', `OPENTINKER_ENGINE_DEVICE=cuda but CUDA did not open: ${info.cuda.error}`, 'device');
        }
      }
      current = info;
      return info;
    }
  }
  throw new EngineError('ENGINE_BACKEND_UNAVAILABLE', `no TensorFlow.js backend could start: ${skipped.map((s) => `${s.name}: ${s.reason}`).join('; ')}`, 'backend');
}

/**
 * The backend chosen by the last {@link initBackend} call, or undefined before the first.
 *
 * @example
 * ```ts
 * currentBackend()?.name; // 'wasm'
 * ```
 */
export function currentBackend(): BackendInfo | undefined {
  return current && current.name === tf.getBackend() ? current : undefined;
}
