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

/**
 * Outputs of native products kept to be handed back instead of computed again. Inside
 * {@link recordProducts} every forward product keeps a copy of its output (outside the wasm heap), in
 * call order; inside {@link replayProducts} the same products, called again in the same order with the
 * same inputs, return those outputs (a copy each) instead of multiplying. Their gradients need only
 * their inputs, so a layer run again under a tape to get its gradient (the shared prefix's last phase)
 * then costs its products' gradients, not its products twice.
 */
export class RecordedProducts {
  private readonly outputs: Float32Array[] = [];
  private next = 0;

  /** Bytes held. */
  get bytes(): number {
    return this.outputs.reduce((sum, o) => sum + o.byteLength, 0);
  }

  /** @internal */
  keep(y: Float32Array): void {
    this.outputs.push(y.slice());
  }

  /** @internal The next recorded output, into y. */
  take(y: Float32Array): void {
    const out = this.outputs[this.next++];
    if (!out || out.length !== y.length) {
      // A caller's bug (the replayed code ran other products than the recorded one), not bad input.
      throw new Error(`native products replayed out of order: product ${this.next} has ${out?.length ?? 'no'} values, ${y.length} wanted`);
    }
    y.set(out);
  }

  /** Whether every recorded output was taken. */
  get replayed(): boolean {
    return this.next === this.outputs.length;
  }
}

let products: { recorded: RecordedProducts; replay: boolean } | undefined;

function withProducts<T>(recorded: RecordedProducts, replay: boolean, fn: () => T): T {
  const outer = products;
  products = { recorded, replay };
  try {
    return fn();
  } finally {
    products = outer;
  }
}

/** Runs `fn`, keeping the output of every native product it runs in `recorded`. */
export function recordProducts<T>(recorded: RecordedProducts, fn: () => T): T {
  return withProducts(recorded, false, fn);
}

/** Runs `fn`, its native products returning `recorded`'s outputs in order (see {@link RecordedProducts}). */
export function replayProducts<T>(recorded: RecordedProducts, fn: () => T): T {
  return withProducts(recorded, true, fn);
}

/** Fills y with a product's output: computed (and kept, when recording), or replayed. */
function product(y: Float32Array, compute: () => void): void {
  if (products?.replay) return products.recorded.take(y);
  compute();
  products?.recorded.keep(y);
}

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
  const [out] = arrays.outputs([[...x.shape.slice(0, -1), n]], ([y], a) =>
    product(y, () => {
      if (m > 0) engineAddon()!.gemm(false, transposeB, 1, m, n, k, a.f32(x), 0, w.handle, 0, y);
    }),
  );
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

/*
 * `x · Wᵀ + u · b`: a frozen native weight's product and a LoRA term (`u = x · A` `[m, r]`, `b` the
 * scaled `B` `[r, out]`) in one output, the term added in place by the addon. Beside the separate product
 * and add it saves, per LoRA linear and token, two `[out]` intermediates that a training pass would keep
 * on its tape (a quarter of a layer's at Qwen2.5-0.5B's sizes) and a single-threaded wasm add.
 * Gradients: x through the weight (as above), u and b through the rank-r product.
 */

const LORA_KERNEL = 'OtNativeLoraMatMul';

registerNativeKernel(LORA_KERNEL, (inputs, attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const u = inputs.u as tf.TensorInfo;
  const b = inputs.b as tf.TensorInfo;
  const w = NativeTensor.byId(attrs.weight as number);
  const [n, k] = w.shape;
  const m = x.shape.slice(0, -1).reduce((p, q) => p * q, 1);
  const r = u.shape[u.shape.length - 1];
  if (x.shape[x.shape.length - 1] !== k || u.shape.length !== 2 || u.shape[0] !== m || b.shape.length !== 2 || b.shape[0] !== r || b.shape[1] !== n) {
    throw new EngineError('ENGINE_INVALID_INPUT', `native LoRA matmul: x [${x.shape}], u [${u.shape}] and b [${b.shape}] do not meet a weight of [${w.shape}]`, 'x');
  }
  const [out] = arrays.outputs([[...x.shape.slice(0, -1), n]], ([y], a) =>
    product(y, () => {
      if (m === 0) return;
      const addon = engineAddon()!;
      addon.gemm(false, true, 1, m, n, k, a.f32(x), 0, w.handle, 0, y);
      addon.gemmAdd(m, n, r, a.f32(u), a.f32(b), y);
    }),
  );
  return out;
});

tf.registerGradient({
  kernelName: LORA_KERNEL,
  inputsToSave: ['u', 'b'],
  gradFunc: (dy, [u, b], attrs) => {
    const rows = tf.reshape(dy as tf.Tensor, [-1, b.shape[1] as number]);
    return {
      x: () => tf.engine().runKernel(KERNEL, { x: dy as tf.Tensor }, { weight: attrs.weight, transposeB: false }) as tf.Tensor,
      u: () => tf.matMul(rows, b, false, true),
      b: () => tf.matMul(u, rows, true, false),
    };
  },
});

/** `x · Wᵀ + u · b` for a native weight `W` `[out, in]`, `u` `[m, r]` and `b` `[r, out]`; differentiable in x, u and b. */
export function nativeLoraMatMul(x: tf.Tensor, w: NativeTensor, u: tf.Tensor, b: tf.Tensor): tf.Tensor {
  return tf.engine().runKernel(LORA_KERNEL, { x, u, b }, { weight: w.id }) as tf.Tensor;
}
