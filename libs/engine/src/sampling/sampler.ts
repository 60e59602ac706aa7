import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { KvCache, type KvLayer } from '../model/kv-cache';
import { maxScoringRows } from '../model/memory-plan';
import { padBatch, sliceRows, type TokenBatch } from '../model/token-batch';
import { sliceAdapterRefs, type Model, type RunResult } from '../model/transformer';
import type { AdapterRef } from '../model/lora-state';
import { Prng } from '../util/prng';
import { drawTokens, type TokenSamplingParams } from './sample-token';
import { NativeDecoding } from './native-decoding';
import { topAlternatives, type TokenAlternative } from './top-alternatives';

/** Options of {@link sample}. */
export interface SamplingOptions {
  /** Most tokens to generate per prompt. */
  maxNewTokens: number;
  /** Default 1. 0 = greedy. */
  temperature?: number;
  /** Default 1 (off). */
  topP?: number;
  /** Default 0 (off). */
  topK?: number;
  /** Seed of the draws (default 0): the same model, prompts, options and seed give the same tokens. */
  seed?: number;
  /**
   * Token ids that end a sequence (the stop token is kept in the output, with its log-prob, so the
   * trainer sees it). Defaults to the config's `eos_token_id`(s); pass `[]` to generate to the limit.
   */
  stopTokenIds?: readonly number[];
  /**
   * Called after each new token of a row; returning true ends that row (finish reason `stop`). This
   * is the hook for stop strings: the caller decodes `generated` with its tokenizer and looks for them.
   */
  stopCheck?: (row: number, generated: readonly number[]) => boolean;
  /** Draw only ids below this (those the tokenizer can decode); default: the whole vocabulary. See {@link TokenSamplingParams.vocabLimit}. */
  vocabLimit?: number;
  /**
   * Continuations per prompt (default 1): the prompt's prefill runs once and its keys/values are shared
   * by its rows. Results come prompt by prompt: prompt `p`'s samples are rows `p·numSamples … +numSamples−1`.
   */
  numSamples?: number;
  /**
   * The LoRA weights to sample with: an adapter's name, a snapshot (`Model.snapshotAdapter`), `null` for
   * the base alone, or one of those per prompt (prompts of different adapters then share each pass over
   * the base weights). Default: the model's current selection (its default adapter, if any).
   */
  adapter?: AdapterRef | readonly AdapterRef[];
  /**
   * Also return each prompt's log-probs (`SampledSequence.promptLogProbs`), computed in the prefill pass
   * the sampling needs anyway: `log p(prompt[i] | prompt[<i])` at temperature 1, NaN at position 0.
   */
  promptLogProbs?: boolean;
  /** Also report this many most likely tokens at each step (`SampledSequence.topLogProbs`), among the ids below `vocabLimit`; default 0. */
  topLogprobs?: number;
}

/** One generated continuation. */
export interface SampledSequence {
  /** The new tokens (prompt excluded), stop token included. */
  tokens: number[];
  /**
   * `logProbs[i] = log p(tokens[i] | prompt, tokens[<i])` under the model's own distribution: the
   * log-softmax of the raw logits at temperature 1 with no top-k/top-p filtering. This is what
   * `Model.scoreTokens` recomputes for the same tokens (to float32 round-off), i.e. the "old log-prob"
   * of PPO-style losses.
   */
  logProbs: number[];
  /** Log-probs under the distribution actually sampled from (temperature, top-k, top-p applied); 0 when greedy. */
  samplingLogProbs: number[];
  /** With `topLogprobs`: the most likely tokens at each step, most likely first, log-probs as in `logProbs`. */
  topLogProbs?: TokenAlternative[][];
  /** `stop`: a stop token or the stop hook ended it; `length`: `maxNewTokens` reached. */
  finishReason: 'stop' | 'length';
  /**
   * With `promptLogProbs`: the prompt's log-probs, `[prompt length]`, NaN at position 0 (nothing precedes
   * it); the same array for every sample of a prompt. What `Model.scoreTokens` gives for the prompt.
   */
  promptLogProbs?: Float32Array;
}

function checkOptions(model: Model, prompts: ReadonlyArray<ArrayLike<number>>, o: SamplingOptions): TokenSamplingParams {
  const bad = (msg: string, field: string): never => {
    throw new EngineError('ENGINE_INVALID_OPTIONS', msg, field);
  };
  const temperature = o.temperature ?? 1;
  const topP = o.topP ?? 1;
  const topK = o.topK ?? 0;
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 1) bad(`maxNewTokens must be a positive integer, got ${o.maxNewTokens}`, 'maxNewTokens');
  if (!(temperature >= 0) || !Number.isFinite(temperature)) bad(`temperature must be >= 0, got ${temperature}`, 'temperature');
  if (!(topP > 0 && topP <= 1)) bad(`topP must be in (0, 1], got ${topP}`, 'topP');
  if (!Number.isInteger(topK) || topK < 0) bad(`topK must be a non-negative integer, got ${topK}`, 'topK');
  if (o.vocabLimit !== undefined && !(Number.isInteger(o.vocabLimit) && o.vocabLimit >= 1)) bad(`vocabLimit must be a positive integer, got ${o.vocabLimit}`, 'vocabLimit');
  const numSamples = o.numSamples ?? 1;
  if (!Number.isInteger(numSamples) || numSamples < 1) bad(`numSamples must be a positive integer, got ${o.numSamples}`, 'numSamples');
  if (o.topLogprobs !== undefined && !(Number.isInteger(o.topLogprobs) && o.topLogprobs >= 0))
    bad(`topLogprobs must be a non-negative integer, got ${o.topLogprobs}`, 'topLogprobs');
  if (prompts.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'no prompts given', 'prompts');
  if (Array.isArray(o.adapter) && o.adapter.length !== prompts.length) bad(`${o.adapter.length} per-prompt adapters for ${prompts.length} prompts`, 'adapter');
  const vocab = model.config.vocab_size;
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', `prompt ${i} is empty`, 'prompts');
    for (let t = 0; t < p.length; t++) {
      if (!Number.isInteger(p[t]) || p[t] < 0 || p[t] >= vocab) {
        throw new EngineError('ENGINE_INVALID_INPUT', `prompt ${i} token ${t} = ${p[t]} is outside the vocabulary [0, ${vocab})`, 'prompts');
      }
    }
    if (p.length + o.maxNewTokens > model.config.max_position_embeddings) {
      throw new EngineError(
        'ENGINE_INVALID_INPUT',
        `prompt ${i} (${p.length} tokens) + maxNewTokens ${o.maxNewTokens} exceeds max_position_embeddings ${model.config.max_position_embeddings}`,
        'maxNewTokens',
      );
    }
  });
  return { temperature, topP, topK, ...(o.vocabLimit !== undefined ? { vocabLimit: o.vocabLimit } : {}) };
}

/** Runs `fn` in a tidy scope and keeps only the logits and the new cache layers. */
function keepRun(fn: () => RunResult): { logits: tf.Tensor2D; present: KvLayer[] } {
  const flat = tf.tidy(() => {
    const r = fn();
    return [r.logits!, ...r.present!.flatMap((l) => [l.k, l.v])];
  });
  const present: KvLayer[] = [];
  for (let i = 1; i < flat.length; i += 2) present.push({ k: flat[i], v: flat[i + 1] });
  return { logits: flat[0] as tf.Tensor2D, present };
}

/** A prefill: last-position logits, every layer's keys/values and, when asked, the prompt tokens' next-token log-probs (position-aligned). */
interface Prefill {
  logits: tf.Tensor2D;
  present: KvLayer[];
  lpNext?: Float32Array;
}

/**
 * One prefill pass over left-padded rows. With `scores`, the pass keeps every position's final hidden
 * state and scores the prompt tokens the way `Model.scoreTokens` does (fused head, or the unembedding
 * LoRA's blocks), then takes the last positions' logits from the same states.
 */
function prefillPass(model: Model, part: TokenBatch, scores: boolean): Prefill {
  const ids = () => tf.tensor2d(part.ids, [part.batchSize, part.seqLen], 'int32');
  if (!scores) return keepRun(() => model.run(ids(), part.mask, undefined, { lastOnly: true, present: true }));
  let lpNext: Float32Array | undefined;
  const r = keepRun(() => {
    const { hidden, present } = model.run(ids(), part.mask, undefined, { present: true, logits: false });
    lpNext = Float32Array.from(model.scoresOf(hidden, part).logProbs.dataSync() as Float32Array);
    const last = new Int32Array(part.batchSize).map((_, row) => row * part.seqLen + part.seqLen - 1);
    return { hidden, present, logits: model.headLogits(tf.gather(hidden, tf.tensor1d(last, 'int32'))) };
  });
  return { ...r, lpNext: lpNext! };
}

/**
 * Tokens a prefill slice holds at most. Its products are as fast per token at this size as at any larger
 * one (thousands of rows keep the GEMM's tiles full), while a layer's intermediates grow with it: a
 * GRPO batch of 256 prompts in one slice needs 0.4 GiB for one SwiGLU product at 0.5B.
 */
const PREFILL_CHUNK_TOKENS = 4096;

/**
 * The prefill pass over left-padded prompts: last-position logits and every layer's keys/values. As many
 * rows at a time as the heap's free bytes and PREFILL_CHUNK_TOKENS allow (a prompt's prefill holds one layer's intermediates per
 * token), the slices' caches joined along the batch axis; each slice under its prompts' adapters when
 * they are given per prompt.
 */
function prefillRows(model: Model, batch: TokenBatch, adapter: SamplingOptions['adapter'], scores: boolean): Prefill {
  const run = (start: number, end: number) => {
    const part = start === 0 && end === batch.batchSize ? batch : sliceRows(batch, start, end);
    return adapter === undefined ? prefillPass(model, part, scores) : model.withAdapter(sliceAdapterRefs(adapter, start, end), () => prefillPass(model, part, scores));
  };
  const rows = Math.min(maxScoringRows(model.config, batch.seqLen), Math.max(1, Math.floor(PREFILL_CHUNK_TOKENS / batch.seqLen)));
  if (rows >= batch.batchSize) return run(0, batch.batchSize);
  const parts: Prefill[] = [];
  try {
    for (let start = 0; start < batch.batchSize; start += rows) parts.push(run(start, Math.min(batch.batchSize, start + rows)));
    let lpNext: Float32Array | undefined;
    if (scores) {
      lpNext = new Float32Array(batch.batchSize * batch.seqLen);
      let at = 0;
      for (const p of parts) {
        lpNext.set(p.lpNext!, at);
        at += p.lpNext!.length;
      }
    }
    return {
      logits: tf.concat(parts.map((p) => p.logits)),
      present: parts[0].present.map((_, layer) => ({ k: tf.concat(parts.map((p) => p.present[layer].k)), v: tf.concat(parts.map((p) => p.present[layer].v)) })),
      ...(lpNext ? { lpNext } : {}),
    };
  } finally {
    for (const p of parts) tf.dispose([p.logits, ...p.present.flatMap((l) => [l.k, l.v])]);
  }
}

/**
 * The prompt each sampled row continues, as an index into the distinct prompts: rows p·n … p·n + n − 1
 * continue prompt p, and prompts with the same tokens (a GRPO group's samples, rolled out as separate
 * rows) are prefilled once. Under per-prompt adapters every prompt stays its own, since its adapter
 * changes its keys and values.
 */
function distinctPrompts(prompts: ReadonlyArray<ArrayLike<number>>, n: number, perPromptAdapters: boolean): { prompts: ArrayLike<number>[]; rowSource: Int32Array } {
  const seen = new Map<string, number>();
  const distinct: ArrayLike<number>[] = [];
  const rowSource = new Int32Array(prompts.length * n);
  prompts.forEach((prompt, p) => {
    const key = perPromptAdapters ? String(p) : Array.prototype.join.call(prompt, ',');
    let at = seen.get(key);
    if (at === undefined) {
      at = distinct.push(prompt) - 1;
      seen.set(key, at);
    }
    rowSource.fill(at, p * n, (p + 1) * n);
  });
  return { prompts: distinct, rowSource };
}

/** A prefill's rows picked by `rowSource` (a prompt's samples share its keys/values). */
function gatherRows(prefill: Prefill, rowSource: Int32Array): Prefill {
  if (rowSource.length === prefill.logits.shape[0] && rowSource.every((source, row) => source === row)) return prefill;
  const index = tf.tensor1d(rowSource, 'int32');
  try {
    return {
      logits: tf.gather(prefill.logits, index),
      present: prefill.present.map((l) => ({ k: tf.gather(l.k, index), v: tf.gather(l.v, index) })),
      ...(prefill.lpNext ? { lpNext: prefill.lpNext } : {}),
    };
  } finally {
    tf.dispose([index, prefill.logits, ...prefill.present.flatMap((l) => [l.k, l.v])]);
  }
}

/** Each prompt's log-probs (NaN at position 0) from a left-padded batch's position-aligned next-token log-probs. */
function promptLogProbsOf(batch: TokenBatch, prompts: ReadonlyArray<ArrayLike<number>>, lpNext: Float32Array): Float32Array[] {
  const t = batch.seqLen;
  return prompts.map((p, row) => {
    const out = new Float32Array(p.length).fill(NaN);
    const pad = t - p.length;
    for (let i = 1; i < p.length; i++) out[i] = lpNext[row * t + pad + i - 1];
    return out;
  });
}

function defaultStops(model: Model): number[] {
  const eos = model.config.eos_token_id;
  return eos === undefined ? [] : Array.isArray(eos) ? eos : [eos];
}

/**
 * Generates continuations of a batch of prompts with a key/value cache: one prefill pass over the
 * prompts, then one single-token pass per new token. Prompts of different lengths are left-padded
 * internally (so every row's next token sits in the same column); positions count real tokens only, so
 * a prompt gets the same numbers as alone or right-padded in training. Rows that have finished keep
 * running until all have (their extra tokens are dropped). Synchronous; tensors are freed before it
 * returns.
 *
 * @example
 * ```ts
 * const [out] = sample(model, [tokenizer.encode('1+2=')], { maxNewTokens: 8, temperature: 1, seed: 7 });
 * out.tokens; out.logProbs; out.finishReason; // 'stop' when an eos id was drawn
 * ```
 */
export function sample(model: Model, prompts: ReadonlyArray<ArrayLike<number>>, options: SamplingOptions): SampledSequence[] {
  const params = checkOptions(model, prompts, options);
  const n = options.numSamples ?? 1;
  const adapter = options.adapter;
  // Per-prompt adapters become per-row ones: prompt p's samples are rows p·n … p·n + n − 1.
  const rowAdapter = Array.isArray(adapter) && n > 1 ? (adapter as readonly AdapterRef[]).flatMap((a) => new Array<AdapterRef>(n).fill(a)) : adapter;
  const decode = () => sampleRows(model, prompts, options, params, n);
  return rowAdapter === undefined ? decode() : model.withAdapter(rowAdapter as AdapterRef | readonly AdapterRef[], decode);
}

function sampleRows(model: Model, prompts: ReadonlyArray<ArrayLike<number>>, options: SamplingOptions, params: TokenSamplingParams, n: number): SampledSequence[] {
  const stops = new Set(options.stopTokenIds ?? defaultStops(model));
  const seed = options.seed ?? 0;
  const b = prompts.length * n;
  const v = model.config.vocab_size;
  const rngs = Array.from({ length: b }, (_, row) => new Prng(seed ^ Math.imul(row + 1, 0x9e3779b1)));
  const top = options.topLogprobs ?? 0;
  const out: SampledSequence[] = Array.from({ length: b }, () => ({
    tokens: [],
    logProbs: [],
    samplingLogProbs: [],
    ...(top > 0 ? { topLogProbs: [] } : {}),
    finishReason: 'length',
  }));
  const done = new Uint8Array(b);
  let remaining = b;

  const distinct = distinctPrompts(prompts, n, Array.isArray(options.adapter));
  const prompted = padBatch(distinct.prompts, { side: 'left' });
  const distinctPrefill = prefillRows(model, prompted, options.adapter, options.promptLogProbs === true);
  if (distinctPrefill.lpNext) {
    const perPrompt = promptLogProbsOf(prompted, distinct.prompts, distinctPrefill.lpNext);
    out.forEach((seq, row) => (seq.promptLogProbs = perPrompt[distinct.rowSource[row]]));
  }
  const keyMask = new Uint8Array(b * prompted.seqLen);
  for (let row = 0; row < b; row++) {
    const source = distinct.rowSource[row];
    keyMask.set(prompted.mask.subarray(source * prompted.seqLen, (source + 1) * prompted.seqLen), row * prompted.seqLen);
  }
  let native: NativeDecoding | undefined;
  let cache: KvCache | undefined;
  let logits: tf.Tensor2D | undefined;
  let first: Float32Array | undefined;
  try {
    // Decoding in one native call per token where the model allows it: the prefill's keys and values
    // move into its cache, each row's copied from its prompt's. The TensorFlow.js step gathers them.
    native = options.maxNewTokens > 1 ? NativeDecoding.open(model, b, prompted.seqLen + options.maxNewTokens) : undefined;
    if (native) {
      native.load(distinctPrefill.present, keyMask, distinct.rowSource);
      const distinctLogits = distinctPrefill.logits.dataSync() as Float32Array;
      first = new Float32Array(b * v);
      distinct.rowSource.forEach((source, row) => first!.set(distinctLogits.subarray(source * v, (source + 1) * v), row * v));
      tf.dispose([distinctPrefill.logits, ...distinctPrefill.present.flatMap((l) => [l.k, l.v])]);
    } else {
      const prefill = gatherRows(distinctPrefill, distinct.rowSource);
      cache = new KvCache(b, prefill.present, keyMask);
      logits = prefill.logits;
    }
  } catch (error) {
    native?.dispose();
    tf.dispose([distinctPrefill.logits, ...distinctPrefill.present.flatMap((l) => [l.k, l.v])]);
    throw error;
  }
  try {
    const next = new Int32Array(b);
    for (let step = 0; step < options.maxNewTokens; step++) {
      const values = step === 0 && first ? first : native ? native.logits : (logits!.dataSync() as Float32Array);
      if (logits && !logits.isDisposed) logits.dispose();
      // The native step computes only the rows still running (NativeDecoding.retire): values' rows are those.
      const stepped = step > 0 && native ? native.rowsStepped : undefined;
      const draws = stepped
        ? drawTokens(
            values,
            stepped.length,
            params,
            Array.from(stepped, (row) => rngs[row]),
            new Uint8Array(stepped.length),
          )
        : drawTokens(values, b, params, rngs, done);
      for (let i = 0; i < draws.length; i++) {
        const row = stepped ? stepped[i] : i;
        if (done[row]) continue;
        const drawn = draws[i]!;
        const seq = out[row];
        seq.tokens.push(drawn.token);
        seq.logProbs.push(drawn.logProb);
        seq.samplingLogProbs.push(drawn.samplingLogProb);
        // The draw's logProb is logits[token] - logZ: the same normaliser serves the alternatives.
        if (top > 0) {
          const rowLogits = values.subarray(i * v, (i + 1) * v);
          seq.topLogProbs!.push(topAlternatives(rowLogits, top, rowLogits[drawn.token] - drawn.logProb, params.vocabLimit));
        }
        next[row] = drawn.token;
        if (stops.has(drawn.token) || (options.stopCheck?.(row, seq.tokens) ?? false)) {
          seq.finishReason = 'stop';
          done[row] = 1;
          remaining--;
        }
      }
      if (remaining === 0 || step === options.maxNewTokens - 1) break;
      if (native) {
        native.retire(done);
        native.step(next);
        continue;
      }
      const kv = cache!;
      const len = kv.length;
      const mask = new Uint8Array(b * (len + 1));
      for (let row = 0; row < b; row++) {
        mask.set(kv.keyMask.subarray(row * len, (row + 1) * len), row * (len + 1));
        mask[row * (len + 1) + len] = 1;
      }
      const r = keepRun(() => model.run(tf.tensor2d(next, [b, 1], 'int32'), mask, kv, { present: true }));
      kv.replace(r.present, mask);
      logits = r.logits;
    }
  } finally {
    if (logits && !logits.isDisposed) logits.dispose();
    cache?.dispose();
    native?.dispose();
  }
  return out;
}
