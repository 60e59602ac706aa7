import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { wasmHeapUsage } from '../kernels/wasm-heap';
import { headDim, type ModelConfig } from './model-config';

/*
 * How much of the wasm heap a pass over a batch needs, so the engine can choose, before allocating,
 * between keeping the whole tape (fastest), recomputing one layer at a time, and refusing with a
 * message that names the size. The per-token sizes are fitted to measurements of the engine's own
 * passes (the wasm heap's live bytes, `memory-plan.spec.ts` checks that estimates bound the measured
 * peak without overshooting it by more than 2.5×). The logits never count: the fused head keeps them
 * outside the heap.
 */

const F32 = 4;

/**
 * Floats one token holds in one decoder layer during a training pass: the tape the backward pass needs
 * plus the gradient of every intermediate (tfjs keeps each until the whole backward pass ends), at context
 * length `s`, less what LoRA terms inside native products spare (`fusedLoraFloats`: their output widths;
 * measured at Qwen2.5-0.5B's shape with all seven linears, 2 rows of 129 after 228 shared tokens: 1.99 GiB
 * against 2.17 estimated). Fitted to Qwen2.5-0.5B's shape (344 KB per token and layer at s 256, 399 at s 512, with the
 * layer's norms, rotary positions, SwiGLU and attention softmax as native kernels that keep only their
 * inputs or output) and to two small shapes (`memory-plan.spec.ts`), with a margin of 12–23 %.
 */
function layerFloatsPerToken(c: ModelConfig, s: number, fusedLoraFloats = 0): number {
  // A LoRA term inside a native product (OtNativeLoraMatMul) spares the base product's and the term's own [out].
  return 52 * c.hidden_size + 8 * c.intermediate_size + 6 * c.num_attention_heads * s - 2 * fusedLoraFloats;
}

/** What else sizes a training pass besides its rows and length. */
export interface PassExtras {
  /** Tokens of a shared prefix the rows continue (`Trainer.sharedPrefix`): their attention reads those keys too. */
  pastLen?: number;
  /** Output floats per token and layer of the LoRA linears whose terms run inside native products. */
  fusedLoraFloats?: number;
}

/** Floats one token needs while one layer runs forward without a tape (its intermediates, then freed). */
function forwardFloatsPerToken(c: ModelConfig, s: number): number {
  return 6 * c.hidden_size + 4 * c.intermediate_size + 3 * c.num_attention_heads * s;
}

/** The head's share per token: final norm, hidden states and their gradient (logits stay outside the heap). */
function headFloatsPerToken(c: ModelConfig): number {
  return 16 * c.hidden_size;
}

/** Bytes of a training pass (forward and backward) over `rows × seqLen` tokens. */
export interface TrainingPassBytes {
  /** With the whole graph's tape kept. */
  tape: number;
  /** Recomputing every decoder layer, one at a time (layer inputs kept). */
  recompute: number;
  /** Keeping the tape of the top `layers` decoder layers and recomputing the others. */
  taped(layers: number): number;
}

/**
 * Floats a row holds per layer to read `pastLen` shared keys and values: its copies, the concatenation
 * with its own, their gradients and the gradient's split (fitted in `memory-plan.spec.ts`).
 */
function pastFloatsPerRow(c: ModelConfig, pastLen: number): number {
  return 12 * pastLen * c.num_key_value_heads * headDim(c);
}

/**
 * Estimated heap bytes of a training pass over `rows` sequences of `seqLen` tokens, for a model with
 * `trainableBytes` of trainable parameters (their gradients: the pass's result, and one more copy while
 * it is added to what earlier micro-batches accumulated), and `extras` (a shared prefix, fused LoRA terms).
 */
export function trainingPassBytes(c: ModelConfig, rows: number, seqLen: number, trainableBytes = 0, extras: PassExtras = {}): TrainingPassBytes {
  const n = rows * seqLen;
  const pastLen = extras.pastLen ?? 0;
  const layer = layerFloatsPerToken(c, pastLen + seqLen, extras.fusedLoraFloats) + pastFloatsPerRow(c, pastLen) / seqLen;
  const head = headFloatsPerToken(c);
  const grads = 2 * trainableBytes;
  const L = c.num_hidden_layers;
  // The inputs of the recomputed layers (and of the first taped one), plus the taped layers' tapes
  // under the head's, or one recomputed layer's tape at a time.
  const taped = (k: number) => F32 * n * ((L - k + 1) * c.hidden_size + Math.max(k, 1) * layer + head) + grads;
  return { tape: F32 * n * (L * layer + head) + grads, recompute: taped(0), taped };
}

/** Estimated heap bytes of a scoring pass (no gradients: one layer's intermediates at a time). */
export function scoringPassBytes(c: ModelConfig, rows: number, seqLen: number): number {
  return F32 * rows * seqLen * (forwardFloatsPerToken(c, seqLen) + headFloatsPerToken(c));
}

/** Bytes the heap can still give to a pass: the budget less what is live. */
export function freeHeapBytes(): number {
  const usage = wasmHeapUsage();
  const live = tf.getBackend() === 'wasm' ? usage.liveBytes : tf.memory().numBytes;
  return usage.budgetBytes - live;
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

/** What a training pass does: keep the whole tape, or recompute the layers below the top `tapedLayers`. */
export interface TrainingPassPlan {
  recompute: boolean;
  /** Decoder layers (the top ones) whose tape is kept; all of them when nothing is recomputed. */
  tapedLayers: number;
  bytes: number;
}

/**
 * The plan of a training pass: the whole tape when it fits, else as many top layers' tapes as fit with the
 * other layers recomputed. Throws `ENGINE_OUT_OF_MEMORY` when not even recomputing every layer fits.
 */
export function planTrainingPass(c: ModelConfig, rows: number, seqLen: number, trainableBytes: number, free = freeHeapBytes(), extras: PassExtras = {}): TrainingPassPlan {
  const need = trainingPassBytes(c, rows, seqLen, trainableBytes, extras);
  const L = c.num_hidden_layers;
  if (need.tape <= free) return { recompute: false, tapedLayers: L, bytes: need.tape };
  if (need.recompute <= free) {
    let k = L - 1;
    while (k > 0 && need.taped(k) > free) k--;
    return { recompute: true, tapedLayers: k, bytes: need.taped(k) };
  }
  throw new EngineError(
    'ENGINE_OUT_OF_MEMORY',
    `a training pass over ${rows} × ${seqLen} tokens needs about ${gib(need.recompute)} of the engine's heap even recomputing layers, ` +
      `and ${gib(free)} are free: pass fewer rows at a time (a smaller micro-batch: ppo_micro_batch_size), ` +
      'shorter sequences, or raise OPENTINKER_ENGINE_MEMORY_MB (at most 4 GiB: the wasm heap)',
    'batch',
  );
}

/**
 * Rows per training pass that cost the least compute within `free` bytes: a pass recomputes the layers
 * whose tapes do not fit, so fewer rows can mean less work, down to `minTokens` tokens a pass (below
 * that, matrix products get too thin to run at full speed). At most {@link maxTrainingRows}; 0 when not
 * even one row fits.
 */
export function preferredTrainingRows(
  c: ModelConfig,
  rows: number,
  seqLen: number,
  trainableBytes: number,
  free = freeHeapBytes(),
  minTokens = 256,
  extras: PassExtras = {},
): number {
  const most = Math.min(rows, maxTrainingRows(c, seqLen, trainableBytes, free, extras));
  if (most < 1) return 0;
  const least = Math.min(most, Math.max(1, Math.ceil(minTokens / seqLen)));
  const recomputed = (r: number) => {
    const plan = planTrainingPass(c, r, seqLen, trainableBytes, free, extras);
    return plan.recompute ? c.num_hidden_layers - plan.tapedLayers : 0;
  };
  let best = most;
  let bestCost = recomputed(most);
  for (let r = most - 1; r >= least && bestCost > 0; r--) {
    const cost = recomputed(r);
    if (cost < bestCost) [best, bestCost] = [r, cost];
  }
  return best;
}

/** The most rows of `seqLen` tokens one training pass can take within `free` bytes (recomputing layers); 0 when not even one. */
export function maxTrainingRows(c: ModelConfig, seqLen: number, trainableBytes: number, free = freeHeapBytes(), extras: PassExtras = {}): number {
  const fixed = trainingPassBytes(c, 0, seqLen, trainableBytes, extras).recompute;
  const perRow = trainingPassBytes(c, 1, seqLen, trainableBytes, extras).recompute - fixed;
  return Math.max(0, Math.floor((free - fixed) / perRow));
}

/** The most rows of `seqLen` tokens one scoring pass (no gradients) can take within `free` bytes; at least 1. */
export function maxScoringRows(c: ModelConfig, seqLen: number, free = freeHeapBytes()): number {
  return Math.max(1, Math.floor(free / scoringPassBytes(c, 1, seqLen)));
}
