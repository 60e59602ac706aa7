import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { engineAddon } from '../native/addon';
import { NativeTensor } from '../native/native-tensor';
import { registerNativeKernel } from './native-kernel';

/*
 * `x · Wᵀ` (or `x · W`) with W a native tensor: a frozen linear weight in Hugging Face's `[out, in]`
 * layout, outside the wasm heap, in any of the addon's dtypes. The gradient flows to x only (the weight
 * is frozen): `dx = dy · W` is the same kernel with the other transpose.
 */

const KERNEL = 'OtNativeMatMul';

registerNativeKernel(KERNEL, (inputs, attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const w = NativeTensor.byId(attrs.weight as number);
  const transposeB = attrs.transposeB as boolean;
  const [rowsW, colsW] = w.shape;
  const k = transposeB ? colsW : rowsW;
  const n = transposeB ? rowsW : colsW;
  if (x.shape[x.shape.length - 1] !== k) {
    throw new EngineError('ENGINE_INVALID_INPUT', `native matmul: input [${x.shape}] does not meet a weight of [${w.shape}]`, 'x');
  }
  const m = x.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  const [out] = arrays.outputs([[...x.shape.slice(0, -1), n]], ([y], a) => {
    if (m > 0) engineAddon()!.gemm(false, transposeB, 1, m, n, k, a.f32(x), 0, w.handle, 0, y);
  });
  return out;
});

tf.registerGradient({
  kernelName: KERNEL,
  gradFunc: (dy, _saved, attrs) => ({
    x: () => tf.engine().runKernel(KERNEL, { x: dy as tf.Tensor }, { weight: attrs.weight, transposeB: !attrs.transposeB }) as tf.Tensor,
  }),
});

/**
 * `x · Wᵀ` for a native weight `W` `[out, in]` (a Hugging Face linear), over the last axis of `x`;
 * `transposeW: false` gives `x · W`. Differentiable in `x`.
 */
export function nativeMatMul(x: tf.Tensor, w: NativeTensor, transposeW = true): tf.Tensor {
  return tf.engine().runKernel(KERNEL, { x }, { weight: w.id, transposeB: transposeW }) as tf.Tensor;
}
