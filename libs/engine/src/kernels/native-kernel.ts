import * as tf from '@tensorflow/tfjs-core';

/*
 * Kernels that run in the native addon on tensors of the wasm or cpu backend.
 *
 * Both backends keep a tensor's values in memory JavaScript can view: the wasm heap (an ArrayBuffer) and
 * plain typed arrays. The addon reads inputs and writes outputs through such views, so a kernel copies
 * nothing. Each kernel is written once against {@link KernelArrays}; {@link registerNativeKernel}
 * registers it for both backends.
 */

/** How a native kernel reaches its tensors' memory on one backend. */
export interface KernelArrays {
  /** The float32 values of an input (a view, not a copy). */
  f32(t: tf.TensorInfo): Float32Array;
  /** The int32 values of an input (a view). */
  i32(t: tf.TensorInfo): Int32Array;
  /**
   * New float32 outputs. Their arrays are handed over only when all are allocated (`fill`): a wasm
   * allocation may grow the heap, which replaces the ArrayBuffer every earlier view was taken from.
   */
  outputs(shapes: number[][], fill: (arrays: Float32Array[], inputs: KernelArrays) => void): tf.TensorInfo[];
}

interface WasmBackend {
  typedArrayFromHeap(t: tf.TensorInfo): Float32Array | Int32Array;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

interface CpuBackend {
  data: { get(dataId: object): { values: unknown } };
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: Float32Array): tf.TensorInfo;
}

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function wasmArrays(backend: WasmBackend): KernelArrays {
  const arrays: KernelArrays = {
    f32: (t) => backend.typedArrayFromHeap(t) as Float32Array,
    i32: (t) => backend.typedArrayFromHeap(t) as Int32Array,
    outputs: (shapes, fill) => {
      const infos = shapes.map((s) => backend.makeOutput(s, 'float32'));
      fill(
        infos.map((i) => backend.typedArrayFromHeap(i) as Float32Array),
        arrays,
      );
      return infos;
    },
  };
  return arrays;
}

function cpuArrays(backend: CpuBackend): KernelArrays {
  const typed = <T>(t: tf.TensorInfo, type: new (n: ArrayLike<number>) => T): T => {
    const v = backend.data.get(t.dataId).values;
    return v instanceof type ? v : new type(v as ArrayLike<number>);
  };
  return {
    f32: (t) => typed(t, Float32Array),
    i32: (t) => typed(t, Int32Array),
    outputs: (shapes, fill) => {
      const data = shapes.map((s) => new Float32Array(size(s)));
      fill(data, cpuArrays(backend));
      return shapes.map((s, i) => backend.makeTensorInfo(s, 'float32', data[i]));
    },
  };
}

/** A native kernel: inputs and attributes in, outputs made through `arrays.outputs`. */
export type NativeKernelImpl = (inputs: tf.NamedTensorInfoMap, attrs: tf.NamedAttrMap, arrays: KernelArrays) => tf.TensorInfo | tf.TensorInfo[];

const registered = new Set<string>();

/** Registers `impl` as kernel `name` on the wasm and cpu backends (once). */
export function registerNativeKernel(name: string, impl: NativeKernelImpl): void {
  if (registered.has(name)) return;
  registered.add(name);
  tf.registerKernel({
    kernelName: name,
    backendName: 'wasm',
    kernelFunc: (({ inputs, attrs, backend }: { inputs: tf.NamedTensorInfoMap; attrs: tf.NamedAttrMap; backend: unknown }) =>
      impl(inputs, attrs, wasmArrays(backend as WasmBackend))) as unknown as tf.KernelFunc,
  });
  tf.registerKernel({
    kernelName: name,
    backendName: 'cpu',
    kernelFunc: (({ inputs, attrs, backend }: { inputs: tf.NamedTensorInfoMap; attrs: tf.NamedAttrMap; backend: unknown }) =>
      impl(inputs, attrs, cpuArrays(backend as CpuBackend))) as unknown as tf.KernelFunc,
  });
}

/** Whether the active backend runs native kernels (wasm and cpu do; others keep weights as tf tensors). */
export function backendRunsNativeKernels(): boolean {
  const name = tf.getBackend();
  return name === 'wasm' || name === 'cpu';
}
