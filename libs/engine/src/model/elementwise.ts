import * as tf from '@tensorflow/tfjs-core';
import { customOp } from './custom-op';

/*
 * Elementwise ops whose gradients need none of their inputs.
 *
 * tfjs's generic `Add` and `Multiply` save both inputs for the backward pass (to reduce broadcast
 * gradients to each input's shape), so every residual, bias and LoRA sum and every scaling by a constant
 * would keep its operands alive until the backward pass: measured at Qwen2.5-0.5B's sizes, a quarter of
 * a layer's tape. These versions save nothing: the shapes they need are known when they run.
 */

const addSameShape = customOp<[tf.Tensor, tf.Tensor]>((a, b) => ({ value: tf.add(a, b), gradFunc: (dy) => [dy, dy] }));

/** `a + b` for tensors of one shape (residuals, LoRA updates). */
export function addSame<T extends tf.Tensor>(a: T, b: T): T {
  return addSameShape(a, b) as T;
}

const addRowVector = customOp<[tf.Tensor, tf.Tensor]>((x, bias) => {
  const width = bias.shape[0];
  return { value: tf.add(x, bias), gradFunc: (dy) => [dy, tf.sum(tf.reshape(dy, [-1, width]), 0)] };
});

/**
 * `x + bias` with `bias` `[d]` broadcast over the rows of `x` `[…, d]`. A frozen bias (a non-trainable
 * variable: the base under LoRA) takes no gradient, so its row sum of `dy` is not computed (a custom
 * op's backward computes every input's gradient, needed or not).
 */
export function addBias<T extends tf.Tensor>(x: T, bias: tf.Tensor1D): T {
  if (bias instanceof tf.Variable && !bias.trainable) return addConstant(x, bias);
  return addRowVector(x, bias) as T;
}

/** `x · c` for a constant `c`. */
export function scaleBy<T extends tf.Tensor>(x: T, c: number): T {
  return customOp<[tf.Tensor]>((input) => ({ value: tf.mul(input, c), gradFunc: (dy) => tf.mul(dy, c) }))(x) as T;
}

/** `x + m` for a constant `m` broadcast onto `x` (an attention mask): the gradient flows to `x` only. */
export function addConstant<T extends tf.Tensor>(x: T, m: tf.Tensor): T {
  return customOp<[tf.Tensor]>((input) => ({ value: tf.add(input, m), gradFunc: (dy) => tf.clone(dy) }))(x) as T;
}
