import type { Prng } from '../util/prng';
import { engineAddon } from '../native/addon';

/** How one token is drawn from a row of logits. */
export interface TokenSamplingParams {
  /** 0 picks the most likely token (greedy); otherwise logits are divided by it. */
  temperature: number;
  /** Keep only the k most likely tokens (ties at the k-th value kept); 0 = off. */
  topK: number;
  /** Keep the smallest set of most likely tokens whose probability reaches p; 1 = off. */
  topP: number;
  /**
   * Only ids below this are drawn (a model's vocabulary may have rows no token of its tokenizer uses, as
   * Qwen2.5's 151,936 against its tokenizer's 151,665): a filter like top-k, applied first. Default: all.
   */
  vocabLimit?: number;
}

/** A drawn token with its log-probabilities. */
export interface DrawnToken {
  token: number;
  /** log p(token) under the model's own distribution: log-softmax of the raw logits (temperature 1, nothing filtered). */
  logProb: number;
  /** log q(token) under the distribution actually sampled from (temperature, top-k, top-p applied); 0 for greedy. */
  samplingLogProb: number;
}

/**
 * Draws one token from `logits` (one row, length = vocabulary) with temperature, then top-k, then
 * top-p, in that order as Hugging Face's and vLLM's samplers apply them. Arithmetic in float64.
 *
 * @example
 * ```ts
 * drawToken(new Float32Array([2, 1, 0]), { temperature: 0, topK: 0, topP: 1 }, rng).token; // 0
 * ```
 */
export function drawToken(logits: ArrayLike<number>, params: TokenSamplingParams, rng: Prng): DrawnToken {
  // logProb is always of the model's whole distribution; the draw is among the first v ids.
  const all = logits.length;
  const v = Math.min(all, params.vocabLimit ?? all);
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < all; i++) if (logits[i] > max) max = logits[i];
  let sumExp = 0;
  for (let i = 0; i < all; i++) sumExp += Math.exp(logits[i] - max);
  const logZ = max + Math.log(sumExp);
  if (params.temperature === 0) {
    for (let i = 1; i < v; i++) if (logits[i] > logits[argmax]) argmax = i;
    return { token: argmax, logProb: logits[argmax] - logZ, samplingLogProb: 0 };
  }
  let maxDrawn = -Infinity;
  for (let i = 0; i < v; i++) if (logits[i] > maxDrawn) maxDrawn = logits[i];

  const invT = 1 / params.temperature;
  const maxT = maxDrawn * invT;
  // Candidates, most likely first, only when a filter needs the order.
  const filtered = (params.topK > 0 && params.topK < v) || params.topP < 1;
  let candidates: Int32Array;
  if (filtered) {
    candidates = new Int32Array(v);
    for (let i = 0; i < v; i++) candidates[i] = i;
    candidates.sort((a, b) => logits[b] - logits[a] || a - b);
    let keep = v;
    if (params.topK > 0 && params.topK < v) {
      const kth = logits[candidates[params.topK - 1]];
      keep = params.topK;
      while (keep < v && logits[candidates[keep]] >= kth) keep++;
    }
    if (params.topP < 1) {
      let z = 0;
      for (let j = 0; j < keep; j++) z += Math.exp(logits[candidates[j]] * invT - maxT);
      let cum = 0;
      let j = 0;
      // Keep a token while the mass before it is below p: the smallest prefix whose mass reaches p.
      while (j < keep && cum < params.topP * (1 - 1e-12)) {
        cum += Math.exp(logits[candidates[j]] * invT - maxT) / z;
        j++;
      }
      keep = Math.max(1, j);
    }
    candidates = candidates.subarray(0, keep);
  } else {
    candidates = new Int32Array(v);
    for (let i = 0; i < v; i++) candidates[i] = i;
  }
  let z = 0;
  for (let j = 0; j < candidates.length; j++) z += Math.exp(logits[candidates[j]] * invT - maxT);
  const u = rng.uniform() * z;
  let acc = 0;
  let token = candidates[candidates.length - 1];
  for (let j = 0; j < candidates.length; j++) {
    acc += Math.exp(logits[candidates[j]] * invT - maxT);
    if (u < acc) {
      token = candidates[j];
      break;
    }
  }
  const samplingLogProb = logits[token] * invT - maxT - Math.log(z);
  return { token, logProb: logits[token] - logZ, samplingLogProb };
}

/**
 * {@link drawToken} for every row of `logits` (`[rows, vocab]`, row-major) that is not `done`, each row with
 * its own generator. Without top-k / top-p filtering (the common case: plain temperature sampling, or
 * greedy) the rows run in the native addon, in parallel and vectorised: the same distribution, one
 * uniform draw per row as drawToken takes, an inverse-CDF search summed in float lanes and double chunks
 * (so a draw can differ from drawToken's only where u·Z falls within rounding of a boundary).
 */
export function drawTokens(logits: Float32Array, rows: number, params: TokenSamplingParams, rngs: Prng[], done: Uint8Array): Array<DrawnToken | undefined> {
  const all = logits.length / rows;
  const v = Math.min(all, params.vocabLimit ?? all);
  const filtered = (params.topK > 0 && params.topK < v) || params.topP < 1;
  const addon = engineAddon();
  if (filtered || !addon || v > 262144) return Array.from({ length: rows }, (_, r) => (done[r] ? undefined : drawToken(logits.subarray(r * all, (r + 1) * all), params, rngs[r])));
  const u = new Float64Array(rows);
  if (params.temperature > 0) for (let r = 0; r < rows; r++) if (!done[r]) u[r] = rngs[r].uniform();
  const token = new Int32Array(rows);
  const logp = new Float32Array(rows);
  const slogp = new Float32Array(rows);
  addon.sampleRows(logits, rows, all, v, params.temperature > 0 ? 1 / params.temperature : 0, u, token, logp, slogp);
  return Array.from({ length: rows }, (_, r) => (done[r] ? undefined : { token: token[r], logProb: logp[r], samplingLogProb: slogp[r] }));
}
