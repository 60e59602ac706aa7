import * as tf from '@tensorflow/tfjs-core';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { matMulDims } from './matmul-dims';

/*
 * `BatchMatMul` for the wasm backend through the host's OpenBLAS (native/blas-matmul.c).
 *
 * The wasm heap is an ArrayBuffer: the addon receives Float32Array views of the operands and the output
 * where the wasm backend keeps them and runs cblas_sgemm on them in place, transposes and batch
 * broadcasting included, with OpenBLAS's threads. On this project's 2-core machines that is several
 * times the XNNPACK path of wasm-batch-matmul.ts, which stays the fallback: the addon is compiled at
 * install when a C compiler is present, and OpenBLAS is opened at run time only if the host has it.
 */

/** What {@link openNativeBlas} found. */
export interface NativeBlasStatus {
  /** Whether the addon loaded and OpenBLAS opened. */
  ok: boolean;
  /** The OpenBLAS library that opened. */
  path?: string;
  /** OpenBLAS's thread count after setting it. */
  threads?: number;
  /** `openblas_get_config()`: version, build options, CPU core type. */
  config?: string;
  /** Why it is not available (no addon built, no OpenBLAS found). */
  error?: string;
}

interface BlasAddon {
  open(paths: string[], threads: number): NativeBlasStatus;
  gemm(ta: boolean, tb: boolean, batch: number, m: number, n: number, k: number, a: Float32Array, strideA: number, b: Float32Array, strideB: number, c: Float32Array): void;
}

/** The parts of tfjs-backend-wasm's BackendWasm this kernel uses (not in its public types). */
interface WasmBackendInternals {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

// Debian/Ubuntu paths first: the generic name resolves through the BLAS alternatives, which may point at
// the slow reference BLAS rather than OpenBLAS, in which case cblas_sgemm exists but is 20–30× slower.
const OPENBLAS_PATHS = [
  '/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0',
  '/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0',
  '/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0',
  '/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0',
  'libopenblas.so.0',
  'libopenblas.so',
];

// As in backend.ts: `require` exists in the CommonJS build, not under Jest's ESM mode.
const nodeRequire: NodeJS.Require = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'package.json'));

let addon: BlasAddon | undefined;
let status: NativeBlasStatus | undefined;

/** Where the build script (native/build.js) writes the addon: inside the package, beside dist/. */
export function nativeAddonPath(): string {
  return join(dirname(nodeRequire.resolve('@opentinker/engine/package.json')), 'native', 'build', 'blas_matmul.node');
}

/**
 * Loads the addon and opens OpenBLAS (once; later calls return the first answer). `threads` defaults to
 * `OPENTINKER_ENGINE_BLAS_THREADS`, else the cores this process may use. `OPENTINKER_OPENBLAS` names a
 * library to try first.
 *
 * @example
 * ```ts
 * const blas = openNativeBlas();
 * if (!blas.ok) console.warn(`engine: OpenBLAS kernel unavailable (${blas.error})`);
 * ```
 */
export function openNativeBlas(threads?: number): NativeBlasStatus {
  if (status) return status;
  const file = nativeAddonPath();
  if (!existsSync(file)) {
    status = { ok: false, error: `addon not built (${file}; run node libs/engine/native/build.js, needs a C compiler)` };
    return status;
  }
  try {
    const loaded = nodeRequire(file) as BlasAddon;
    const wanted = threads ?? (Number(process.env.OPENTINKER_ENGINE_BLAS_THREADS) || availableParallelism());
    const paths = process.env.OPENTINKER_OPENBLAS ? [process.env.OPENTINKER_OPENBLAS, ...OPENBLAS_PATHS] : OPENBLAS_PATHS;
    status = loaded.open(paths, wanted);
    if (status.ok) addon = loaded;
    else status = { ok: false, error: `OpenBLAS not found (install libopenblas0): ${status.error}` };
  } catch (e) {
    status = { ok: false, error: e instanceof Error ? e.message.split('\n')[0] : String(e) };
  }
  return status;
}

/**
 * The kernel: C[i] = op(A[i]) · op(B[i]) on the wasm heap. Returns undefined for what it does not take
 * (non-float32, general broadcasting of multi-dimensional batch shapes, empty products), which the
 * caller sends to another kernel.
 */
export function blasBatchMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo | undefined {
  if (!addon) return undefined;
  const a = args.inputs.a as tf.TensorInfo;
  const b = args.inputs.b as tf.TensorInfo;
  if (a.dtype !== 'float32' || b.dtype !== 'float32') return undefined;
  const ta = Boolean(args.attrs?.transposeA);
  const tb = Boolean(args.attrs?.transposeB);
  const { m, n, k, kb, aBatch, bBatch, batchA, batchB } = matMulDims(a, b, ta, tb);
  // One operand broadcast whole, or identical batch shapes: anything else goes to the general kernel.
  const sameBatch = aBatch.length === bBatch.length && aBatch.every((d, i) => d === bBatch[i]);
  if (k !== kb || m * n * k === 0 || !(sameBatch || batchA === 1 || batchB === 1)) return undefined;
  const backend = args.backend as WasmBackendInternals;
  const outShape = tf.backend_util.assertAndGetBroadcastShape(aBatch, bBatch).concat([m, n]);
  const batch = Math.max(batchA, batchB);
  const out = backend.makeOutput(outShape, 'float32');
  // Read the heap after allocating: growing wasm memory replaces the ArrayBuffer.
  const heap = backend.wasm.HEAPU8.buffer;
  const view = (t: tf.TensorInfo, length: number) => new Float32Array(heap, backend.dataIdMap.get(t.dataId).memoryOffset, length);
  addon.gemm(ta, tb, batch, m, n, k, view(a, batchA * m * k), batchA === 1 ? 0 : m * k, view(b, batchB * k * n), batchB === 1 ? 0 : k * n, view(out, batch * m * n));
  return out;
}
