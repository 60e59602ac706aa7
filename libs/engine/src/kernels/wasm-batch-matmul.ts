import * as tf from '@tensorflow/tfjs-core';
import { matMulDims } from './matmul-dims';
import { engineAddon } from '../native/addon';
import { nativeBatchMatMul } from './native-batch-matmul';

/*
 * A faster `BatchMatMul` for the wasm backend.
 *
 * Stock tfjs-backend-wasm 4.22 sends only unbatched, untransposed products to XNNPACK; every transposed
 * or batched product (all of the backward pass, all of attention) runs a scalar loop at ~2 GFLOP/s,
 * about a tenth of the XNNPACK path on this machine. This kernel materialises transposed operands with
 * the wasm Transpose kernel and cuts batched products into 2-D products that read and write the wasm
 * heap in place (tensor views at offsets, no copies), each of which the stock C++ entry point then
 * sends to XNNPACK. Small products stay on the stock kernel: an XNNPACK call costs tens of
 * microseconds to set up, more than a tiny product (KV-cache decode attention) takes.
 * Any failure falls back to the stock kernel for that call.
 */

/** The parts of tfjs-backend-wasm's BackendWasm this kernel uses (not exported in its public types). */
interface WasmBackendInternals {
  wasm: {
    cwrap(name: string, ret: null, args: string[]): (...args: unknown[]) => void;
    tfjs: { disposeData(id: number): void };
  };
  dataIdMap: { get(dataId: object): { id: number; memoryOffset: number }; delete(dataId: object): void };
  makeOutput(shape: number[], dtype: tf.DataType, memoryOffset?: number): tf.TensorInfo;
  disposeData(dataId: object): boolean;
}

type MatMulFn = (aId: number, aShape: Uint8Array, aRank: number, bId: number, bShape: Uint8Array, bRank: number, ta: boolean, tb: boolean, outId: number) => void;

/** Products with fewer multiply-adds than this per batch slice stay on the stock kernel. */
export const MIN_SLICE_WORK = 16384;

let stock: tf.KernelConfig | undefined;
let matmulFn: MatMulFn | undefined;
let matmulFnOwner: unknown;

function shapeBytes(shape: number[]): Uint8Array {
  return new Uint8Array(new Int32Array(shape).buffer);
}

function fastBatchMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo | tf.TensorInfo[] {
  const fallback = () => stock!.kernelFunc(args as Parameters<tf.KernelFunc>[0]);
  const a = args.inputs.a as tf.TensorInfo;
  const b = args.inputs.b as tf.TensorInfo;
  const transposeA = Boolean(args.attrs?.transposeA);
  const transposeB = Boolean(args.attrs?.transposeB);
  if (a.dtype !== 'float32' || b.dtype !== 'float32') return fallback();
  const { m, n, k, kb, batchA, batchB } = matMulDims(a, b, transposeA, transposeB);
  const batch = Math.max(batchA, batchB);
  if (k !== kb || (batchA !== batchB && batchA !== 1 && batchB !== 1)) return fallback(); // let the stock kernel report it
  if ((batch === 1 && !transposeA && !transposeB) || m * k * n < MIN_SLICE_WORK || m * n * k === 0) return fallback();

  const backend = args.backend as WasmBackendInternals;
  try {
    if (!matmulFn || matmulFnOwner !== backend) {
      matmulFn = backend.wasm.cwrap('BatchMatMul', null, ['number', 'array', 'number', 'number', 'array', 'number', 'number', 'number', 'number']) as unknown as MatMulFn;
      matmulFnOwner = backend;
    }
    const outShape = tf.backend_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2)).concat([m, n]);
    const transposeKernel = tf.getKernel('Transpose', 'wasm')!.kernelFunc;
    const temporaries: tf.TensorInfo[] = [];
    // Operands as row-major [batch, m, k] and [batch, k, n] on the heap.
    const materialise = (x: tf.TensorInfo, batchX: number, rows: number, cols: number, transposed: boolean): tf.TensorInfo => {
      if (!transposed) return x;
      const view = { dataId: x.dataId, shape: [batchX, cols, rows], dtype: x.dtype };
      const t = transposeKernel({ inputs: { x: view }, backend: backend as unknown as tf.KernelBackend, attrs: { perm: [0, 2, 1] } }) as tf.TensorInfo;
      temporaries.push(t);
      return t;
    };
    const a3 = materialise(a, batchA, m, k, transposeA);
    const b3 = materialise(b, batchB, k, n, transposeB);
    const out = backend.makeOutput([batch, m, n], 'float32');
    const aOff = backend.dataIdMap.get(a3.dataId).memoryOffset;
    const bOff = backend.dataIdMap.get(b3.dataId).memoryOffset;
    const oOff = backend.dataIdMap.get(out.dataId).memoryOffset;
    const aShape = shapeBytes([1, m, k]);
    const bShape = shapeBytes([1, k, n]);
    const views: tf.TensorInfo[] = [];
    const view = (shape: number[], offset: number): number => {
      const v = backend.makeOutput(shape, 'float32', offset);
      views.push(v);
      return backend.dataIdMap.get(v.dataId).id;
    };
    try {
      for (let i = 0; i < batch; i++) {
        const aId = view([m, k], aOff + (batchA === 1 ? 0 : i) * m * k * 4);
        const bId = view([k, n], bOff + (batchB === 1 ? 0 : i) * k * n * 4);
        const oId = view([m, n], oOff + i * m * n * 4);
        matmulFn(aId, aShape, 3, bId, bShape, 3, false, false, oId);
      }
    } finally {
      // Views borrow memory: drop their registrations (and XNNPACK's cached operators) without freeing it.
      for (const v of views) {
        backend.wasm.tfjs.disposeData(backend.dataIdMap.get(v.dataId).id);
        backend.dataIdMap.delete(v.dataId);
      }
      for (const t of temporaries) backend.disposeData(t.dataId);
    }
    return { dataId: out.dataId, shape: outShape, dtype: 'float32' };
  } catch {
    return fallback();
  }
}

/**
 * Which `BatchMatMul` the wasm backend runs: `native` (the engine's own product in its addon,
 * native-batch-matmul.ts; what it does not take goes to `xnnpack`), `xnnpack` (the kernel above) or
 * `stock` (tfjs-backend-wasm's own).
 */
export type WasmMatMul = 'native' | 'xnnpack' | 'stock';

let active: WasmMatMul = 'stock';

function nativeThenXnnpack(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo | tf.TensorInfo[] {
  return nativeBatchMatMul(args) ?? fastBatchMatMul(args);
}

/**
 * Registers the wasm backend's `BatchMatMul`. `initBackend()` picks `native` when the addon is loaded,
 * else `xnnpack`; `OPENTINKER_ENGINE_MATMUL` overrides that. Asking for `native` without the addon gives
 * `xnnpack`. Safe to call repeatedly. Returns the kernel now registered.
 *
 * @example
 * ```ts
 * useWasmMatMul('stock'); // compare against tfjs's own kernel
 * ```
 */
export function useWasmMatMul(kind: WasmMatMul): WasmMatMul {
  const current = tf.getKernel('BatchMatMul', 'wasm');
  if (!current) return 'stock';
  if (!stock) stock = current;
  const chosen: WasmMatMul = kind === 'native' && !engineAddon() ? 'xnnpack' : kind;
  const kernelFunc = { native: nativeThenXnnpack, xnnpack: fastBatchMatMul, stock: undefined }[chosen];
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel(kernelFunc ? { kernelName: 'BatchMatMul', backendName: 'wasm', kernelFunc: kernelFunc as unknown as tf.KernelFunc } : stock);
  active = chosen;
  return chosen;
}

/** The wasm `BatchMatMul` registered by the last {@link useWasmMatMul}. */
export function wasmMatMul(): WasmMatMul {
  return active;
}
