import * as tf from '@tensorflow/tfjs-core';
import { RecordedProducts, recordProducts, replayProducts } from '../kernels/native-matmul';
import type { KvLayer } from '../model/kv-cache';
import type { Model } from '../model/transformer';
import { addEmbeddingGrads, addVariableGrads, embeddingVariables, type PassPast } from './layer-recompute';

/*
 * Training rows that continue one prefix (the samples of a GRPO group continue one prompt) without
 * running the prefix once per row. The prefix's tokens attend only to each other, so their keys and
 * values are the same in every row; what differs is the gradient that reaches them, which is the sum of
 * what each row's attention sends back. Three phases:
 *
 * 1. `prefixForward`: the prefix runs once, without a tape, keeping each layer's input (`[P, hidden]`)
 *    and its keys and values (`[1, KV, P, hd]`), and the outputs of its native products (frozen weights
 *    with their LoRA terms) as long as they fit RECORDED_PRODUCT_BYTES.
 * 2. The rows' passes (`recomputedGradients` with `past`): each row starts at position P and attends to
 *    the prefix's keys and values as inputs of the pass; the gradients of those inputs come back and are
 *    summed over the passes.
 * 3. `prefixBackward`: the layers of the prefix run again under a tape, top to bottom, one at a time, and
 *    back-propagate the summed key/value gradients (and, below the top layer, the gradient of the layer's
 *    output that the layer above sent down) into the adapters' (or weights') gradients. A layer whose
 *    products phase 1 kept gets them back instead of multiplying again (`replayProducts`): the weights
 *    have not changed, and the products' gradients need only their inputs.
 *
 * The prefix's own tokens carry no loss (their log-probs are not computed): the prefix ends one token
 * before the rows' first scored token's predecessor, so every scored token is predicted inside a row's
 * pass. The result is the gradient of running every row whole, checked in `shared-prefix.spec.ts`.
 */

/**
 * Bytes of native products' outputs phase 1 keeps for phase 3 (outside the wasm heap), bottom layers
 * first. Qwen2.5-0.5B keeps 12,672 floats per token and layer (a 228-token prompt's 24 layers: 277 MB);
 * a longer prefix or a larger model keeps what fits and recomputes the rest.
 */
export const RECORDED_PRODUCT_BYTES = 512 * 1024 * 1024;

/** Phase 1's result: what the rows' passes and phase 3 need. Owns its tensors ({@link disposePrefix}). */
export interface PrefixState {
  ids: Int32Array;
  /** Prefix tokens. */
  length: number;
  /** Layer inputs `[P, hidden]`, index i entering layer i (the embedding output first). */
  inputs: tf.Tensor2D[];
  past: PassPast;
  /** Per layer, the outputs of its native products, where phase 1 kept them. */
  products: Array<RecordedProducts | undefined>;
}

/** Runs the prefix's `ids` once without a tape (phase 1), keeping up to `productBytes` of its products' outputs. */
export function prefixForward(model: Model, ids: Int32Array, productBytes = RECORDED_PRODUCT_BYTES): PrefixState {
  const p = ids.length;
  const ctx = model.passContext(new Uint8Array(p).fill(1), 1, 0, p);
  const inputs: tf.Tensor2D[] = [];
  const layers: KvLayer[] = [];
  const products: Array<RecordedProducts | undefined> = [];
  let kept = 0;
  try {
    inputs.push(tf.tidy(() => model.embedIds(tf.tensor1d(ids, 'int32'))));
    for (let i = 0; i < model.config.num_hidden_layers; i++) {
      const recorded = new RecordedProducts();
      const [x, k, v] = tf.tidy(() =>
        recordProducts(recorded, () => {
          const r = model.layerForward(i, inputs[i], ctx);
          return [r.x, r.k, r.v];
        }),
      );
      layers.push({ k, v });
      const fits = recorded.bytes > 0 && kept + recorded.bytes <= productBytes;
      products.push(fits ? recorded : undefined);
      if (fits) kept += recorded.bytes;
      // The top layer's output is never read: the prefix's hidden states score nothing.
      if (i + 1 < model.config.num_hidden_layers) inputs.push(x as tf.Tensor2D);
      else x.dispose();
    }
  } catch (error) {
    tf.dispose([...inputs, ...layers.flatMap((l) => [l.k, l.v])]);
    throw error;
  } finally {
    tf.dispose([ctx.cos, ctx.sin, ctx.bias, ctx.swap]);
  }
  return { ids, length: p, inputs, past: { length: p, layers }, products };
}

/**
 * Phase 3: the prefix's layers back-propagate `pastGrads` (per layer, summed over the rows' passes).
 * Returns the gradients of `variables` by variable name, as `tf.variableGrads` does.
 */
export function prefixBackward(
  model: Model,
  state: PrefixState,
  pastGrads: Array<{ k?: tf.Tensor; v?: tf.Tensor } | undefined>,
  variables: tf.Variable[],
): Record<string, tf.Tensor> {
  const p = state.length;
  const wanted = new Set(variables.map((v) => v.name));
  const grads: Record<string, tf.Tensor> = {};
  // A trainable embedding (full fine-tuning) takes the first layer's input gradient too.
  const embedVars = embeddingVariables(variables);
  const ctx = model.passContext(new Uint8Array(p).fill(1), 1, 0, p);
  let dx: tf.Tensor | undefined;
  try {
    for (let i = model.config.num_hidden_layers - 1; i >= 0; i--) {
      const g = pastGrads[i];
      const vars = model.layerVariables(i).filter((v) => wanted.has(v.name));
      if (!g?.k && !g?.v && !dx) continue;
      const down = dx;
      // One scalar whose gradient is the layer's vector-Jacobian product with (dx, dK, dV).
      const recorded = state.products[i];
      state.products[i] = undefined;
      const forward = () => model.layerForward(i, state.inputs[i], ctx);
      const step = tf.engine().gradients(
        () => {
          const r = recorded ? replayProducts(recorded, forward) : forward();
          const parts: tf.Scalar[] = [];
          if (down) parts.push(tf.sum(tf.mul(r.x, down)));
          if (g?.k) parts.push(tf.sum(tf.mul(r.k, g.k)));
          if (g?.v) parts.push(tf.sum(tf.mul(r.v, g.v)));
          return tf.addN(parts) as tf.Scalar;
        },
        [state.inputs[i], ...vars],
        undefined,
        true,
      );
      step.value.dispose();
      if (down) down.dispose();
      if (recorded && !recorded.replayed) throw new Error(`layer ${i} ran fewer native products than phase 1 recorded`);
      dx = step.grads[0];
      addVariableGrads(grads, vars, step.grads.slice(1));
    }
    if (dx && embedVars.length > 0) {
      const ids = tf.tensor1d(state.ids, 'int32');
      try {
        addEmbeddingGrads(grads, model, ids, embedVars, dx as tf.Tensor2D);
      } finally {
        ids.dispose();
      }
    }
    return grads;
  } catch (error) {
    tf.dispose(Object.values(grads));
    throw error;
  } finally {
    if (dx && !dx.isDisposed) dx.dispose();
    tf.dispose([ctx.cos, ctx.sin, ctx.bias, ctx.swap]);
  }
}

/** Frees phase 1's tensors. */
export function disposePrefix(state: PrefixState): void {
  state.products.fill(undefined);
  tf.dispose([...state.inputs, ...state.past.layers.flatMap((l) => [l.k, l.v])]);
}
