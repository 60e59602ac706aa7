import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import type { Model } from '../model/transformer';
import { logSumExp, topAlternatives, type TokenAlternative } from './top-alternatives';

/** Log-probs of a prompt's own tokens, as OpenAI's `echo` with `logprobs` reports them. */
export interface PromptLogprobs {
  /** `logProbs[t] = log p(ids[t] | ids[<t])` under the model (temperature 1); null for the first token, which has no context. */
  logProbs: Array<number | null>;
  /** The `top` most likely tokens at each position (what could have been there), most likely first; null for the first. */
  top: Array<TokenAlternative[] | null>;
}

/** Logit rows turned into numbers at a time: a bounded slice of `[T, vocab]`, whatever the prompt's length. */
const ROW_BYTES = 64 * 1024 * 1024;

/**
 * Scores one prompt under the model: each token's log-prob given the tokens before it, and the `top`
 * most likely alternatives at each position among the ids below `vocabLimit`. One pass over the prompt
 * (as a prefill), then the output head over slices of positions, so the `[T, vocab]` logits are never
 * held whole. Synchronous; tensors are freed before it returns.
 *
 * @example
 * ```ts
 * const { logProbs, top } = promptLogprobs(model, [1, 5, 7], 2);
 * logProbs; // [null, log p(5 | 1), log p(7 | 1 5)]
 * ```
 */
export function promptLogprobs(model: Model, ids: readonly number[], top: number, vocabLimit?: number): PromptLogprobs {
  const t = ids.length;
  const vocab = model.config.vocab_size;
  if (t === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'the prompt is empty', 'prompts');
  if (t > model.config.max_position_embeddings) {
    throw new EngineError('ENGINE_INVALID_INPUT', `the prompt (${t} tokens) exceeds max_position_embeddings ${model.config.max_position_embeddings}`, 'prompts');
  }
  for (let i = 0; i < t; i++) {
    if (!Number.isInteger(ids[i]) || ids[i] < 0 || ids[i] >= vocab) {
      throw new EngineError('ENGINE_INVALID_INPUT', `prompt token ${i} = ${ids[i]} is outside the vocabulary [0, ${vocab})`, 'prompts');
    }
  }
  const out: PromptLogprobs = { logProbs: [null], top: [null] };
  if (t === 1) return out;
  // Position p predicts token p + 1: the last position predicts nothing asked for.
  const hidden = tf.tidy(() => {
    const run = model.run(tf.tensor2d(Int32Array.from(ids), [1, t], 'int32'), new Uint8Array(t).fill(1), undefined, { logits: false });
    return tf.slice(run.hidden, [0, 0], [t - 1, run.hidden.shape[1]]);
  });
  try {
    const rows = Math.max(1, Math.floor(ROW_BYTES / (vocab * 4)));
    for (let start = 0; start < t - 1; start += rows) {
      const count = Math.min(rows, t - 1 - start);
      const logits = tf.tidy(() => model.headLogits(tf.slice(hidden, [start, 0], [count, hidden.shape[1]])));
      const values = logits.dataSync() as Float32Array;
      logits.dispose();
      for (let r = 0; r < count; r++) {
        const row = values.subarray(r * vocab, (r + 1) * vocab);
        const logZ = logSumExp(row);
        out.logProbs.push(row[ids[start + r + 1]] - logZ);
        out.top.push(topAlternatives(row, top, logZ, vocabLimit));
      }
    }
  } finally {
    hidden.dispose();
  }
  return out;
}
