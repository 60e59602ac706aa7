import * as tf from '@tensorflow/tfjs-core';
import { engineAddon } from '../native/addon';
import { matMulDims } from './matmul-dims';

/*
 * `BatchMatMul` for the wasm backend through the engine's own matrix product (native/gemm.c).
 *
 * The wasm heap is an ArrayBuffer: the addon receives Float32Array views of the operands and the output
 * where the wasm backend keeps them and multiplies them in place, transposes and batch broadcasting
 * included, on its own threads. The XNNPACK path of wasm-batch-matmul.ts stays the fallback for what
 * this kernel does not take, and for hosts where the addon could not be built.
 */

/** The parts of tfjs-backend-wasm's BackendWasm this kernel uses (not in its public types). */
interface WasmBackendInternals {
  typedArrayFromHeap(t: tf.TensorInfo): Float32Array;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/**
 * The kernel: C[i] = op(A[i]) · op(B[i]) on the wasm heap. Returns undefined for what it does not take
 * (non-float32, general broadcasting of multi-dimensional batch shapes, empty products), which the
 * caller sends to another kernel.
 */
export function nativeBatchMatMul(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo | undefined {
  const addon = engineAddon();
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
  // Views after allocating: growing wasm memory replaces the ArrayBuffer.
  addon.gemm(
    ta,
    tb,
    batch,
    m,
    n,
    k,
    backend.typedArrayFromHeap(a),
    batchA === 1 ? 0 : m * k,
    backend.typedArrayFromHeap(b),
    batchB === 1 ? 0 : k * n,
    backend.typedArrayFromHeap(out),
  );
  return out;
}
