import * as tf from '@tensorflow/tfjs-core';

/*
 * `Identity` for wasm without a copy.
 *
 * tfjs-core clones every tensor it saves for the backward pass (`saveTensorsForBackwardMode`), and the
 * stock wasm Identity copies the whole buffer each time: 8 % of a training step on the engine's bench
 * presets. Tensors are immutable (a variable's assign swaps its buffer, no kernel writes into an input),
 * so the clone can share the buffer under a reference count, as tfjs-backend-cpu's Identity and wasm's
 * own Reshape already do.
 */

interface RefCountingBackend {
  incRef(dataId: object): void;
}

function sharedIdentity({ inputs, backend }: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const x = inputs.x as tf.TensorInfo;
  (backend as RefCountingBackend).incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
}

let stockIdentity: tf.KernelConfig | undefined;

/**
 * Registers the sharing Identity for wasm (true) or restores tfjs's copying one (false). Idempotent;
 * `initBackend()` turns it on.
 *
 * @example
 * ```ts
 * useSharedWasmIdentity(true);
 * ```
 */
export function useSharedWasmIdentity(enabled: boolean): void {
  const current = tf.getKernel('Identity', 'wasm');
  if (!current) return;
  const shared = current.kernelFunc === (sharedIdentity as unknown as tf.KernelFunc);
  if (shared === enabled) return;
  if (!stockIdentity && !shared) stockIdentity = current;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel(enabled ? { kernelName: 'Identity', backendName: 'wasm', kernelFunc: sharedIdentity as unknown as tf.KernelFunc } : stockIdentity!);
}
