import * as tf from '@tensorflow/tfjs-core';
import { engineAddon } from '../native/addon';
import { NativeTensor } from '../native/native-tensor';
import { registerNativeKernel, type NativeKernelImpl } from './native-kernel';

/*
 * The language-model head fused with its log-softmax (native/token-scores.c): for hidden states h
 * `[n, d]`, a head W `[vocab, d]` and one target id per row, the target's log-prob, the row's entropy
 * and its log-sum-exp, without the `[n, vocab]` logits ever existing as a tensor (600 KB per token at
 * Qwen2.5's vocabulary). The head is a native tensor (frozen) or a float32 tensor `w` (trainable: its
 * gradient is computed too). Under a gradient tape with a native head, the forward pass also returns
 * E_p[W] per row (one more product per tile of the vocabulary), from which the log-prob's gradient is
 * `dlogp·(W_target − E_p[W])` without touching the logits again; a loss with an entropy term, or a
 * trainable head, has its backward pass recompute each block of logits instead.
 */

// Two kernel names for one implementation: the gradient config lists the inputs to save, and only the
// tensor-head kernel has a `w`.
const KERNEL = 'OtTokenScores';
const KERNEL_W = 'OtTokenScoresW';
const GRAD = 'OtTokenScoresGrad';
const GRAD_EW = 'OtTokenScoresGradEw';

type Head = { w?: tf.TensorInfo; native?: NativeTensor };

function headOf(inputs: tf.NamedTensorInfoMap, attrs: tf.NamedAttrMap): Head {
  return inputs.w ? { w: inputs.w as tf.TensorInfo } : { native: NativeTensor.byId(attrs.head as number) };
}

function vocabOf(head: Head): number {
  return head.w ? head.w.shape[0] : head.native!.shape[0];
}

const forward: NativeKernelImpl = (inputs, attrs, arrays) => {
  const h = inputs.h as tf.TensorInfo;
  const targets = inputs.targets as tf.TensorInfo;
  const head = headOf(inputs, attrs);
  const [n, d] = h.shape;
  const vocab = vocabOf(head);
  const withEw = Boolean(attrs.ew) && !head.w;
  return arrays.outputs([[n], [n], [n], [n, withEw ? d : 0]], ([logp, entropy, lse, ew], a) => {
    if (n === 0) return;
    engineAddon()!.tokenScores(a.f32(h), n, d, head.w ? a.f32(head.w) : head.native!.handle, vocab, a.i32(targets), logp, lse, attrs.entropy ? entropy : null, withEw ? ew : null);
  });
};
registerNativeKernel(KERNEL, forward);
registerNativeKernel(KERNEL_W, forward);

// One output: dh (`part: 'h'`) or, for a tensor head, dW (`part: 'w'`). tfjs runs each input's gradient
// in its own scope, which would free a second output before it is used; a trainable head (tiny models
// only) pays one more pass instead.
registerNativeKernel(GRAD, (inputs, attrs, arrays) => {
  const h = inputs.h as tf.TensorInfo;
  const head = headOf(inputs, attrs);
  const [n, d] = h.shape;
  const vocab = vocabOf(head);
  const wantW = attrs.part === 'w';
  const [out] = arrays.outputs([wantW ? [vocab, d] : [n, d]], ([result], a) => {
    const dh = wantW ? new Float32Array(n * d) : result;
    const dw = wantW ? result.fill(0) : null;
    if (n === 0) return;
    const dent = inputs.dent ? a.f32(inputs.dent as tf.TensorInfo) : null;
    engineAddon()!.tokenScoresGrad(
      a.f32(h),
      n,
      d,
      head.w ? a.f32(head.w) : head.native!.handle,
      vocab,
      a.i32(inputs.targets as tf.TensorInfo),
      a.f32(inputs.lse as tf.TensorInfo),
      dent ? a.f32(inputs.entropy as tf.TensorInfo) : null,
      a.f32(inputs.dlogp as tf.TensorInfo),
      dent,
      dh,
      dw,
    );
  });
  return out;
});

registerNativeKernel(GRAD_EW, (inputs, attrs, arrays) => {
  const ew = inputs.ew as tf.TensorInfo;
  const [n, d] = ew.shape;
  const head = NativeTensor.byId(attrs.head as number);
  const [out] = arrays.outputs([[n, d]], ([dh], a) => {
    if (n > 0) engineAddon()!.tokenScoresGradEw(n, d, head.handle, head.shape[0], a.i32(inputs.targets as tf.TensorInfo), a.f32(inputs.dlogp as tf.TensorInfo), a.f32(ew), dh);
  });
  return out;
});

function gradient(withHead: boolean): tf.GradConfig {
  return {
    kernelName: withHead ? KERNEL_W : KERNEL,
    inputsToSave: withHead ? ['h', 'targets', 'w'] : ['h', 'targets'],
    outputsToSave: [false, true, true, true],
    gradFunc: (dys, saved, attrs) => {
      // An output outside the loss gets a null gradient.
      const [dlogpIn, dentIn] = dys as Array<tf.Tensor | null>;
      const [h, targets, ...rest] = saved;
      const w = withHead ? rest[0] : undefined;
      const [entropy, lse, ew] = rest.slice(-3);
      // tfjs hands a zero gradient, not null, to an output the loss reaches only through a zero coefficient.
      const useEntropy = Boolean(attrs.entropy) && dentIn !== null && (dentIn.dataSync() as Float32Array).some((x) => x !== 0);
      if (!w && !useEntropy && ew.size > 0) {
        return { h: () => tf.engine().runKernel(GRAD_EW, { ew, targets, dlogp: dlogpIn ?? tf.zerosLike(lse) }, { head: attrs.head }) as tf.Tensor };
      }
      const grad = (part: 'h' | 'w') => () =>
        tf
          .engine()
          .runKernel(
            GRAD,
            { h, targets, lse, dlogp: dlogpIn ?? tf.zerosLike(lse), ...(w ? { w } : {}), ...(useEntropy ? { entropy, dent: dentIn! } : {}) },
            { ...attrs, part },
          ) as tf.Tensor;
      return { h: grad('h'), ...(w ? { w: grad('w') } : {}) };
    },
  };
}
tf.registerGradient(gradient(false));
tf.registerGradient(gradient(true));

/** What {@link tokenScores} returns, one entry per row. */
export interface TokenScoreTensors {
  logProbs: tf.Tensor1D;
  /** Zeros unless entropies were asked for. */
  entropy: tf.Tensor1D;
  logSumExp: tf.Tensor1D;
}

/**
 * Log-prob of `targets[i]` under `softmax(h[i] · Wᵀ)` for each row, and (with `entropy`) the row's
 * entropy; differentiable in `h` (and in `head` when it is a tensor).
 */
export function tokenScores(h: tf.Tensor2D, head: NativeTensor | tf.Tensor2D, targets: tf.Tensor1D, options: { entropy: boolean }): TokenScoreTensors {
  const inputs: tf.NamedTensorMap = head instanceof NativeTensor ? { h, targets } : { h, targets, w: head };
  // Under a gradient tape (tfjs counts open tapes in its engine state) the forward pass prepares the gradient.
  const taped = (tf.engine().state as unknown as { gradientDepth: number }).gradientDepth > 0;
  const attrs = { entropy: options.entropy, ew: taped, ...(head instanceof NativeTensor ? { head: head.id } : {}) };
  const [logProbs, entropy, logSumExp] = tf.engine().runKernel(head instanceof NativeTensor ? KERNEL : KERNEL_W, inputs, attrs) as tf.Tensor1D[];
  return { logProbs, entropy, logSumExp };
}
