import * as tf from '@tensorflow/tfjs-core';
import { engineAddon } from '../native/addon';
import { backendRunsNativeKernels, registerNativeKernel } from './native-kernel';

/*
 * A decoder layer's elementwise and row-wise stages in the native addon (native/layer-ops.c), on every
 * thread of its pool, forward and backward: RMSNorm, rotary positions, SwiGLU's silu(g)·u and the
 * attention softmax under its mask; and AdamW's update (train/adamw.ts). On wasm
 * these ran single-threaded, one tfjs op per arithmetic step (an RMSNorm's backward was ten kernels and
 * as many heap round trips); here each is one pass over its inputs. Each op saves only its inputs for
 * the backward pass, as the tfjs versions in model/ do, and computes the same formulas (checked against
 * them in native-layer-ops.spec.ts). The differentiable ops that use these kernels are in model/
 * (rms-norm.ts, rope.ts, swiglu.ts, attention.ts), beside the tfjs versions they replace.
 */

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

registerNativeKernel('OtRmsNorm', (inputs, attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const w = inputs.w as tf.TensorInfo;
  const d = x.shape[x.shape.length - 1];
  const n = size(x.shape) / d;
  const [y] = arrays.outputs([x.shape], ([out], a) => {
    if (n > 0) engineAddon()!.rmsNorm(a.f32(x), a.f32(w), n, d, attrs.eps as number, out);
  });
  return y;
});

registerNativeKernel('OtRmsNormGrad', (inputs, attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const d = x.shape[x.shape.length - 1];
  const n = size(x.shape) / d;
  return arrays.outputs([x.shape, [d]], ([dx, dw], a) => {
    if (n > 0) engineAddon()!.rmsNormGrad(a.f32(x), a.f32(inputs.w as tf.TensorInfo), a.f32(inputs.dy as tf.TensorInfo), n, d, attrs.eps as number, dx, dw);
    else dw.fill(0);
  });
});

registerNativeKernel('OtSwiglu', (inputs, _attrs, arrays) => {
  const g = inputs.g as tf.TensorInfo;
  const [y] = arrays.outputs([g.shape], ([out], a) => {
    const n = size(g.shape);
    if (n > 0) engineAddon()!.swiglu(a.f32(g), a.f32(inputs.u as tf.TensorInfo), n, out);
  });
  return y;
});

registerNativeKernel('OtSwigluGrad', (inputs, _attrs, arrays) => {
  const g = inputs.g as tf.TensorInfo;
  return arrays.outputs([g.shape, g.shape], ([dg, du], a) => {
    const n = size(g.shape);
    if (n > 0) engineAddon()!.swigluGrad(a.f32(g), a.f32(inputs.u as tf.TensorInfo), a.f32(inputs.dy as tf.TensorInfo), n, dg, du);
  });
});

registerNativeKernel('OtRope', (inputs, attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const [b, t, heads, hd] = x.shape;
  const [y] = arrays.outputs([x.shape], ([out], a) => {
    if (b * t > 0) {
      engineAddon()!.rope(a.f32(x), a.f32(inputs.cos as tf.TensorInfo), a.f32(inputs.sin as tf.TensorInfo), b * t, heads, hd, attrs.transpose as boolean, out);
    }
  });
  return y;
});

registerNativeKernel('OtMaskedSoftmax', (inputs, _attrs, arrays) => {
  const x = inputs.x as tf.TensorInfo;
  const bias = inputs.bias as tf.TensorInfo;
  const s = x.shape[x.shape.length - 1];
  const t = x.shape[x.shape.length - 2];
  const b = x.shape[0];
  const rows = size(x.shape) / s;
  const [y] = arrays.outputs([x.shape], ([out], a) => {
    if (rows === 0) return;
    out.set(a.f32(x));
    engineAddon()!.softmaxRows(out, a.f32(bias), rows, s, rows / b, t);
  });
  return y;
});

registerNativeKernel('OtSoftmaxGrad', (inputs, _attrs, arrays) => {
  const y = inputs.y as tf.TensorInfo;
  const s = y.shape[y.shape.length - 1];
  const rows = size(y.shape) / s;
  const [dx] = arrays.outputs([y.shape], ([out], a) => {
    if (rows > 0) engineAddon()!.softmaxGrad(a.f32(y), a.f32(inputs.dy as tf.TensorInfo), rows, s, out);
  });
  return dx;
});

registerNativeKernel('OtAdamW', (inputs, attrs, arrays) => {
  const p = inputs.p as tf.TensorInfo;
  return arrays.outputs([p.shape, p.shape, p.shape], ([np, nm, nv], a) => {
    np.set(a.f32(p));
    nm.set(a.f32(inputs.m as tf.TensorInfo));
    nv.set(a.f32(inputs.v as tf.TensorInfo));
    const f = attrs as Record<string, number>;
    if (np.length > 0) engineAddon()!.adamw(np, nm, nv, a.f32(inputs.g as tf.TensorInfo), 1, f.b1, f.b2, f.eps, f.decay, f.step, f.sqrtBc2);
  });
});

const run = (name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap = {}) => tf.engine().runKernel(name, inputs, attrs) as tf.Tensor | tf.Tensor[];

/** Whether the layer stages run in the addon (it is loaded and the backend is wasm or cpu). */
export function nativeLayerOps(): boolean {
  return engineAddon() !== undefined && backendRunsNativeKernels();
}

/** `w · x / sqrt(mean(x²) + eps)` over the last axis. */
export function rmsNormKernel(x: tf.Tensor, w: tf.Tensor, eps: number): tf.Tensor {
  return run('OtRmsNorm', { x, w }, { eps }) as tf.Tensor;
}

/** RMSNorm's gradients `[dx, dw]` for output gradient `dy`. */
export function rmsNormGradKernel(x: tf.Tensor, w: tf.Tensor, dy: tf.Tensor, eps: number): tf.Tensor[] {
  return run('OtRmsNormGrad', { x, w, dy }, { eps }) as tf.Tensor[];
}

/** `silu(g) · u`. */
export function siluProductKernel(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  return run('OtSwiglu', { g, u }) as tf.Tensor;
}

/** `[dg, du]` of `silu(g) · u` for output gradient `dy`. */
export function siluProductGradKernel(g: tf.Tensor, u: tf.Tensor, dy: tf.Tensor): tf.Tensor[] {
  return run('OtSwigluGrad', { g, u, dy }) as tf.Tensor[];
}

/**
 * Rotary positions on `x` `[B, T, heads, hd]` with tables `[B, T, 1, hd]` (model/rope.ts's convention):
 * `x·cos + swap(x)·sin`, or with `transpose` its gradient form `x·cos + swap(x·sin)`.
 */
export function ropeKernel(x: tf.Tensor, cos: tf.Tensor, sinSigned: tf.Tensor, transpose: boolean): tf.Tensor {
  return run('OtRope', { x, cos, sin: sinSigned }, { transpose }) as tf.Tensor;
}

/**
 * `softmax(x + bias)` over the last axis for attention scores `x` `[B, …, T, S]` and a mask `bias`
 * `[B, 1, …, T, S]` (0 or a large negative per query and key, shared by every head).
 */
export function maskedSoftmaxKernel(x: tf.Tensor, bias: tf.Tensor): tf.Tensor {
  return run('OtMaskedSoftmax', { x, bias }) as tf.Tensor;
}

/** The softmax's input gradient `y·(dy − Σ dy·y)` from its output `y`. */
export function softmaxGradKernel(y: tf.Tensor, dy: tf.Tensor): tf.Tensor {
  return run('OtSoftmaxGrad', { y, dy }) as tf.Tensor;
}

/** One AdamW update (native/layer-ops.h's formula): the new parameter and moments, `[p, m, v]`. */
export function adamwKernel(
  p: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  g: tf.Tensor,
  o: { b1: number; b2: number; eps: number; decay: number; step: number; sqrtBc2: number },
): tf.Tensor[] {
  return run('OtAdamW', { p, m, v, g }, o) as tf.Tensor[];
}
