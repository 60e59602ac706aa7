import * as tf from '@tensorflow/tfjs-core';

/** The parts of the wasm backend object these kernels touch (the class is not exported by name in its types' main entry). */
interface WasmBackendLike {
  readSync(dataId: object): tf.backend_util.BackendValues;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): tf.backend_util.TypedArray;
}

/**
 * `UnsortedSegmentSum` for wasm, which ships without it. The gradient of `gather` (embedding lookup,
 * picking each target's log-prob) scatters rows back with it; the work is one pass over the rows,
 * small next to the matmuls, so a plain JS loop over the wasm heap is enough.
 */
function unsortedSegmentSum({ inputs, backend, attrs }: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const b = backend as WasmBackendLike;
  const x = inputs.x as tf.TensorInfo;
  const ids = inputs.segmentIds as tf.TensorInfo;
  const numSegments = attrs!.numSegments as number;
  const n = ids.shape.reduce((p, v) => p * v, 1);
  const size = x.shape.reduce((p, v) => p * v, 1);
  const inner = n === 0 ? 0 : size / n;
  // Read inputs before allocating: a heap growth detaches views taken earlier.
  const xv = b.readSync(x.dataId) as Float32Array;
  const iv = b.readSync(ids.dataId) as Int32Array;
  const outShape = [numSegments, ...x.shape.slice(ids.shape.length)];
  const out = b.makeOutput(outShape, x.dtype);
  const ov = b.typedArrayFromHeap(out) as Float32Array;
  ov.fill(0);
  for (let i = 0; i < n; i++) {
    const seg = iv[i];
    if (seg < 0 || seg >= numSegments) continue; // TensorFlow drops out-of-range ids
    const src = i * inner;
    const dst = seg * inner;
    for (let j = 0; j < inner; j++) ov[dst + j] += xv[src + j];
  }
  return out;
}

/**
 * Registers kernels the wasm backend lacks and the engine needs (idempotent). `initBackend()` calls it.
 *
 * @example
 * ```ts
 * registerWasmMissingKernels();
 * ```
 */
export function registerWasmMissingKernels(): void {
  if (!tf.getKernel('UnsortedSegmentSum', 'wasm')) {
    tf.registerKernel({ kernelName: 'UnsortedSegmentSum', backendName: 'wasm', kernelFunc: unsortedSegmentSum as unknown as tf.KernelFunc });
  }
}
