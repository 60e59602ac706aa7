import * as tf from '@tensorflow/tfjs-core';
import type { TokenBatch } from '../model/token-batch';
import type { KvLayer } from '../model/kv-cache';
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
  /** With `past`: the gradients of its keys and values, per layer (`undefined` where none flows). */
  pastGrads?: Array<{ k?: tf.Tensor; v?: tf.Tensor }>;
}

/**
 * Keys and values every row of a pass continues from (a shared prompt, see `train/shared-prefix.ts`):
 * per layer `[1, KV, length, hd]`, rotary positions applied. The pass's rows then start at position
 * `length`, and the gradients reaching these tensors come back in {@link RecomputedGradients.pastGrads}.
 */
export interface PassPast {
  length: number;
  layers: KvLayer[];
}

export function recomputedGradients(
  model: Model,
  batch: TokenBatch,
  coefficients: LossCoefficients | ((scores: CurrentScores) => LossCoefficients),
  variables: tf.Variable[],
  tapedLayers = 0,
  past?: PassPast,
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
  const add = (vs: tf.Variable[], gs: Array<tf.Tensor | undefined>) => addVariableGrads(grads, vs, gs);

  const ids = tf.tensor2d(batch.ids, [b, t], 'int32');
  const flatIds = tf.reshape(ids, [b * t]) as tf.Tensor1D;
  const p = past?.length ?? 0;
  const ctx = model.passContext(past ? keyMaskAfter(batch.mask, b, t, p) : batch.mask, b, p, t);
  // Each row reads the shared keys and values through a concatenation of copies (a memcpy, where wasm's
  // tile is a slow generic loop); the tape adds the copies' gradients into the shared tensor's.
  const copies = (x: tf.Tensor) => (b === 1 ? x : tf.concat(new Array<tf.Tensor>(b).fill(x), 0));
  const pastOf = (i: number): KvLayer | undefined => past && { k: copies(past.layers[i].k), v: copies(past.layers[i].v) };
  const pastXs = (from: number, to: number): tf.Tensor[] => (past ? past.layers.slice(from, to).flatMap((l) => [l.k, l.v]) : []);
  const pastGrads: Array<{ k?: tf.Tensor; v?: tf.Tensor }> = [];
  const keepPast = (from: number, gs: tf.Tensor[]) => {
    for (let j = 0; j < gs.length; j += 2) pastGrads[from + j / 2] = { k: gs[j], v: gs[j + 1] };
  };
  // Without a trainable embedding (and nothing below the taped layers), the gradient of the first layer's input is not needed.
  const embedVars = embeddingVariables(outer);
  const needDx = first > 0 || embedVars.length > 0;
  const ctxTensors = [ctx.cos, ctx.sin, ctx.bias, ctx.swap];
  // Layer inputs: xs[i] enters layer i, for i ≤ first.
  const xs: tf.Tensor2D[] = [tf.tidy(() => model.embedIds(flatIds))];
  let dx: tf.Tensor | undefined;
  try {
    for (let i = 0; i < first; i++) xs.push(tf.tidy(() => model.layerForward(i, xs[i], ctx, pastOf(i)).x));

    let lp: Float32Array | undefined;
    let ent: Float32Array | undefined;
    let val: Float32Array | undefined;
    const head = tf.engine().gradients(
      () => {
        let top = xs[first];
        for (let i = first; i < layers; i++) top = model.layerForward(i, top, ctx, pastOf(i)).x;
        const hidden = model.finalHidden(top);
        const s = surrogateOfScores(batch, model.scoresOf(hidden, batch), coefficients);
        lp = s.logProbs.dataSync() as Float32Array;
        ent = s.entropy.dataSync() as Float32Array;
        val = s.values?.dataSync() as Float32Array | undefined;
        return s.loss;
      },
      [...(needDx ? [xs[first]] : []), ...outer, ...topVars, ...pastXs(first, layers)],
      undefined,
      true,
    );
    const loss = head.value.dataSync()[0];
    head.value.dispose();
    const hg = needDx ? head.grads : [undefined as unknown as tf.Tensor, ...head.grads];
    dx = needDx ? hg[0] : undefined;
    add(outer, hg.slice(1, 1 + outer.length));
    add(topVars, hg.slice(1 + outer.length, 1 + outer.length + topVars.length));
    keepPast(first, hg.slice(1 + outer.length + topVars.length));

    for (let i = first - 1; i >= 0; i--) {
      const vars = byLayer[i];
      const dy = dx as tf.Tensor2D;
      const step = tf.engine().gradients(() => model.layerForward(i, xs[i], ctx, pastOf(i)).x, [xs[i], ...vars, ...pastXs(i, i + 1)], dy, true);
      step.value.dispose();
      dy.dispose();
      xs[i + 1].dispose();
      dx = step.grads[0];
      add(vars, step.grads.slice(1, 1 + vars.length));
      keepPast(i, step.grads.slice(1 + vars.length));
    }
    // A trainable embedding (full fine-tuning) gets the input's gradient too; a tied head added its part above.
    if (embedVars.length > 0) addEmbeddingGrads(grads, model, flatIds, embedVars, dx as tf.Tensor2D);
    return { loss, grads, lpNext: lp!, entNext: ent!, ...(val ? { valNext: val } : {}), ...(past ? { pastGrads } : {}) };
  } catch (error) {
    tf.dispose(Object.values(grads));
    tf.dispose(pastGrads.flatMap((g) => [g.k, g.v]).filter((x): x is tf.Tensor => x !== undefined));
    throw error;
  } finally {
    tf.dispose([ids, flatIds, ...ctxTensors, ...xs.filter((x) => !x.isDisposed)]);
    if (dx && !dx.isDisposed) dx.dispose();
  }
}

/** Adds `gs[i]` (where there is one) into `grads` under `vs[i]`'s name, freeing what it replaces. @internal */
export function addVariableGrads(grads: Record<string, tf.Tensor>, vs: tf.Variable[], gs: Array<tf.Tensor | undefined>): void {
  vs.forEach((v, i) => {
    const g = gs[i];
    if (!g) return;
    const prev = grads[v.name];
    grads[v.name] = prev ? tf.add(prev, g) : g;
    if (prev) tf.dispose([prev, g]);
  });
}

/** The trainable input embedding among `variables` (full fine-tuning), if any. @internal */
export function embeddingVariables(variables: tf.Variable[]): tf.Variable[] {
  return variables.filter((v) => v.name.endsWith('/model.embed_tokens.weight'));
}

/** Adds the embedding's gradient, from the gradient `dx` of the first layer's input over tokens `ids`. @internal */
export function addEmbeddingGrads(grads: Record<string, tf.Tensor>, model: Model, ids: tf.Tensor1D, embedVars: tf.Variable[], dx: tf.Tensor2D): void {
  const e = tf.engine().gradients(() => model.embedIds(ids), embedVars, dx, true);
  e.value.dispose();
  addVariableGrads(grads, embedVars, e.grads);
}

/** `[B, past + T]` key mask of rows that continue `past` real tokens. */
export function keyMaskAfter(mask: Uint8Array, b: number, t: number, past: number): Uint8Array {
  const out = new Uint8Array(b * (past + t));
  for (let r = 0; r < b; r++) {
    out.fill(1, r * (past + t), r * (past + t) + past);
    out.set(mask.subarray(r * t, (r + 1) * t), r * (past + t) + past);
  }
  return out;
}
