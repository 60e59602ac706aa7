import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EngineError } from './errors';
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

/** Options of {@link initBackend}. */
export interface InitBackendOptions {
  /**
   * Use only this backend (fail if it cannot start) instead of the first that starts among
   * tensorflow → wasm → cpu. Defaults to `OPENTINKER_ENGINE_BACKEND` when set.
   */
  backend?: BackendName;
  /**
   * On wasm, the BatchMatMul kernel: `native` (the engine's own product in its addon), `xnnpack`
   * (transposes materialised, batches cut into 2-D XNNPACK products) or `stock`. Defaults to
   * `OPENTINKER_ENGINE_MATMUL` when set, else `native`, which falls back to `xnnpack` where the addon is
   * missing (`BackendInfo.native.error` says why).
   */
  matmul?: WasmMatMul;
  /** Threads of the addon's matrix product; default `OPENTINKER_ENGINE_THREADS`, else the cores this process may use. */
  threads?: number;
  /**
   * Most bytes of tensors the wasm heap may hold (activations, trainable weights, optimizer state);
   * default `OPENTINKER_ENGINE_MEMORY_MB`, else the heap's 4 GiB less a reserve. Micro-batches and
   * recomputation are sized from it, and an allocation past it is refused with `ENGINE_OUT_OF_MEMORY`.
   */
  memoryBytes?: number;
  /**
   * `auto` (default; `OPENTINKER_ENGINE_DEVICE`): products with native weights run on the GPU when the
   * process was given one (`CUDA_VISIBLE_DEVICES`) and CUDA opens; `cuda` requires it; `cpu` never.
   */
  device?: 'auto' | 'cuda' | 'cpu';
}

// `require` exists in the CommonJS build; under Jest's ESM mode it does not, and the working directory
// (the repository root there) resolves the same node_modules.
const nodeRequire: NodeJS.Require = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'package.json'));

const TENSORFLOW_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'];

let wasmPathsSet = false;

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
  const wanted = options.backend ?? (process.env.OPENTINKER_ENGINE_BACKEND as BackendName | undefined);
  if (wanted !== undefined && !['tensorflow', 'wasm', 'cpu'].includes(wanted)) {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `unknown backend "${wanted}"; use tensorflow, wasm or cpu`, 'backend');
  }
  const matmul = options.matmul ?? (process.env.OPENTINKER_ENGINE_MATMUL as WasmMatMul | undefined);
  if (matmul !== undefined && !['native', 'xnnpack', 'stock'].includes(matmul)) {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `unknown matmul kernel "${matmul}"; use native, xnnpack or stock`, 'matmul');
  }
  const threadSetting = options.threads ?? (process.env.OPENTINKER_ENGINE_THREADS ? Number(process.env.OPENTINKER_ENGINE_THREADS) : undefined);
  if (threadSetting !== undefined && !(Number.isInteger(threadSetting) && threadSetting >= 1)) {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `threads must be a positive integer, got ${threadSetting}`, 'threads');
  }
  const memoryMb = process.env.OPENTINKER_ENGINE_MEMORY_MB ? Number(process.env.OPENTINKER_ENGINE_MEMORY_MB) : undefined;
  if (memoryMb !== undefined && !(memoryMb >= 64)) throw new EngineError('ENGINE_INVALID_OPTIONS', `OPENTINKER_ENGINE_MEMORY_MB must be a number >= 64, got ${process.env.OPENTINKER_ENGINE_MEMORY_MB}`, 'memory');
  const device = options.device ?? (process.env.OPENTINKER_ENGINE_DEVICE as InitBackendOptions['device'] | undefined);
  if (device !== undefined && !['auto', 'cuda', 'cpu'].includes(device)) {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `unknown device "${device}"; use auto, cuda or cpu`, 'device');
  }
  options = { ...options, device, matmul, memoryBytes: options.memoryBytes ?? (memoryMb !== undefined ? memoryMb * 1024 * 1024 : undefined) };
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
  throw new EngineError(
    'ENGINE_BACKEND_UNAVAILABLE',
    `no TensorFlow.js backend could start: ${skipped.map((s) => `${s.name}: ${s.reason}`).join('; ')}`,
    'backend',
  );
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
