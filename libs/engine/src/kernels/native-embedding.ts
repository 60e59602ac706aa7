import * as tf from '@tensorflow/tfjs-core';
import { engineAddon } from '../native/addon';
import { NativeTensor } from '../native/native-tensor';
import { registerNativeKernel } from './native-kernel';

/*
 * Rows of a native embedding table `[vocab, hidden]` for int32 ids, widened to float32 in the wasm
 * heap. The table is frozen, so the op has no gradient (ids are integers: nothing upstream needs one).
 */

const KERNEL = 'OtNativeGatherRows';

registerNativeKernel(KERNEL, (inputs, attrs, arrays) => {
  const ids = inputs.ids as tf.TensorInfo;
  const table = NativeTensor.byId(attrs.table as number);
  const width = table.shape[1];
  const [out] = arrays.outputs([[ids.shape.reduce((a, b) => a * b, 1), width]], ([rows], a) => {
    engineAddon()!.gatherRows(table.handle, width, a.i32(ids), rows);
  });
  return out;
});

/** `table[ids]` as `[ids.size, hidden]`; ids outside the table throw (never read past it). */
export function nativeGatherRows(table: NativeTensor, ids: tf.Tensor): tf.Tensor2D {
  return tf.engine().runKernel(KERNEL, { ids }, { table: table.id }) as tf.Tensor2D;
}
