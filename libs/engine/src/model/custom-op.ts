import * as tf from '@tensorflow/tfjs-core';

/** What a custom op's forward function returns: its value and the gradient of each input. */
export interface CustomOpResult {
  value: tf.Tensor;
  gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[];
}

/**
 * `tf.customGrad` with plain tensor arguments: `forward(...inputs, save)` computes the value and says how
 * to differentiate it. Only what is passed to `save` (or read as plain numbers) reaches the gradient:
 * tfjs frees every other tensor of the forward pass before the backward pass runs.
 */
export function customOp<Args extends tf.Tensor[]>(forward: (...args: [...Args, (saved: tf.Tensor[]) => void]) => CustomOpResult): (...inputs: Args) => tf.Tensor {
  return tf.customGrad(forward as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (...inputs: Args) => tf.Tensor;
}
