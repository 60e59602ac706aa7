import * as tf from '@tensorflow/tfjs-core';
import type { TokenBatch } from '../model/token-batch';
import type { Model } from '../model/transformer';
import { surrogateOfScores, type CurrentScores, type LossCoefficients } from './logprobs';

/**
 * Gradients of a batch's surrogate loss with activation recomputation ("gradient checkpointing") per
 * decoder layer: the forward pass keeps only each layer's input (`[tokens, hidden]`, 3.5 KB per token at
 * Qwen2.5-0.5B's width), then the backward pass walks the layers from the last to the first, running each
 * layer's forward again under a tape and back-propagating the gradient of its output through it. The heap
 * then holds one layer's tape at a time instead of all of them, at the price of one more forward pass.
 *
 * `tapedLayers` of the top layers are not recomputed: they run once, under the same tape as the head,
 * as far as the heap has room for their tapes (the memory plan chooses how many), so a pass recomputes
 * only the layers that do not fit.
 *
 * The result is the gradient the whole-graph pass gives (the same operations in the same order; only
 * their scheduling differs), checked against it in `layer-recompute.spec.ts`.
 */
export interface RecomputedGradients {
  loss: number;
  /** By variable name (`tf.Variable.name`), as `tf.variableGrads` returns them. */
  grads: Record<string, tf.Tensor>;
  lpNext: Float32Array;
  entNext: Float32Array;
  valNext?: Float32Array;
}

export function recomputedGradients(
  model: Model,
  batch: TokenBatch,
  coefficients: LossCoefficients | ((scores: CurrentScores) => LossCoefficients),
  variables: tf.Variable[],
  tapedLayers = 0,
): RecomputedGradients {
  const { batchSize: b, seqLen: t } = batch;
  const layers = model.config.num_hidden_layers;
  // Layers [first, layers) run under the head's tape; layers below `first` are recomputed.
  const first = layers - Math.max(0, Math.min(layers, Math.floor(tapedLayers)));
  const wanted = new Set(variables.map((v) => v.name));
  const byLayer = Array.from({ length: layers }, (_, i) => model.layerVariables(i).filter((v) => wanted.has(v.name)));
  const inLayers = new Set(byLayer.flat().map((v) => v.name));
  const outer = variables.filter((v) => !inLayers.has(v.name));
  const topVars = byLayer.slice(first).flat();
  const grads: Record<string, tf.Tensor> = {};
  const add = (vs: tf.Variable[], gs: tf.Tensor[]) => {
    vs.forEach((v, i) => {
      const g = gs[i];
      if (!g) return;
      const prev = grads[v.name];
      grads[v.name] = prev ? tf.add(prev, g) : g;
      if (prev) tf.dispose([prev, g]);
    });
  };

  const ids = tf.tensor2d(batch.ids, [b, t], 'int32');
  const flatIds = tf.reshape(ids, [b * t]) as tf.Tensor1D;
  const ctx = model.passContext(batch.mask, b, 0, t);
  const ctxTensors = [ctx.cos, ctx.sin, ctx.bias, ctx.swap];
  // Layer inputs: xs[i] enters layer i, for i ≤ first.
  const xs: tf.Tensor2D[] = [tf.tidy(() => model.embedIds(flatIds))];
  let dx: tf.Tensor | undefined;
  try {
    for (let i = 0; i < first; i++) xs.push(tf.tidy(() => model.layerForward(i, xs[i], ctx).x));

    let lp: Float32Array | undefined;
    let ent: Float32Array | undefined;
    let val: Float32Array | undefined;
    const head = tf.engine().gradients(
      () => {
        let top = xs[first];
        for (let i = first; i < layers; i++) top = model.layerForward(i, top, ctx).x;
        const hidden = model.finalHidden(top);
        const s = surrogateOfScores(batch, model.scoresOf(hidden, batch), coefficients);
        lp = s.logProbs.dataSync() as Float32Array;
        ent = s.entropy.dataSync() as Float32Array;
        val = s.values?.dataSync() as Float32Array | undefined;
        return s.loss;
      },
      [xs[first], ...outer, ...topVars],
      undefined,
      true,
    );
    const loss = head.value.dataSync()[0];
    head.value.dispose();
    dx = head.grads[0];
    add(outer, head.grads.slice(1, 1 + outer.length));
    add(topVars, head.grads.slice(1 + outer.length));

    for (let i = first - 1; i >= 0; i--) {
      const vars = byLayer[i];
      const dy = dx as tf.Tensor2D;
      const step = tf.engine().gradients(() => model.layerForward(i, xs[i], ctx).x, [xs[i], ...vars], dy, true);
      step.value.dispose();
      dy.dispose();
      xs[i + 1].dispose();
      dx = step.grads[0];
      add(vars, step.grads.slice(1));
    }
    // A trainable embedding (full fine-tuning) gets the input's gradient too; a tied head added its part above.
    const embedVars = outer.filter((v) => v.name.endsWith('/model.embed_tokens.weight'));
    if (embedVars.length > 0) {
      const e = tf.engine().gradients(() => model.embedIds(flatIds), embedVars, dx as tf.Tensor2D, true);
      e.value.dispose();
      add(embedVars, e.grads);
    }
    return { loss, grads, lpNext: lp!, entNext: ent!, ...(val ? { valNext: val } : {}) };
  } catch (error) {
    tf.dispose(Object.values(grads));
    throw error;
  } finally {
    tf.dispose([ids, flatIds, ...ctxTensors, ...xs.filter((x) => !x.isDisposed)]);
    if (dx && !dx.isDisposed) dx.dispose();
  }
}
