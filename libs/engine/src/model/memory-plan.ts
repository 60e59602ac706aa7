import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { wasmHeapUsage } from '../kernels/wasm-heap';
import type { ModelConfig } from './model-config';

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
 * length `s`. Fitted to Qwen2.5-0.5B's shape (568 KB per token and layer at s 256, 638 at s 512) and to
 * bench-b (130 KB), with a margin of about 15 %.
 */
function layerFloatsPerToken(c: ModelConfig, s: number): number {
  return 85 * c.hidden_size + 13 * c.intermediate_size + 6 * c.num_attention_heads * s;
}

/** Floats one token needs while one layer runs forward without a tape (its intermediates, then freed). */
function forwardFloatsPerToken(c: ModelConfig, s: number): number {
  return 40 * c.hidden_size + 7 * c.intermediate_size + 4 * c.num_attention_heads * s;
}

/** The head's share per token: final norm, hidden states and their gradient (logits stay outside the heap). */
function headFloatsPerToken(c: ModelConfig): number {
  return 16 * c.hidden_size;
}

/** Bytes of a training pass (forward and backward) over `rows × seqLen` tokens. */
export interface TrainingPassBytes {
  /** With the whole graph's tape kept. */
  tape: number;
  /** Recomputing one decoder layer at a time (layer inputs kept). */
  recompute: number;
}

/**
 * Estimated heap bytes of a training pass over `rows` sequences of `seqLen` tokens, for a model with
 * `trainableBytes` of trainable parameters (their gradients: the pass's result, and one more copy while
 * it is added to what earlier micro-batches accumulated).
 */
export function trainingPassBytes(c: ModelConfig, rows: number, seqLen: number, trainableBytes = 0): TrainingPassBytes {
  const n = rows * seqLen;
  const layer = layerFloatsPerToken(c, seqLen);
  const head = headFloatsPerToken(c);
  const grads = 2 * trainableBytes;
  return {
    tape: F32 * n * (c.num_hidden_layers * layer + head) + grads,
    // Every layer's input, plus one layer under a tape at a time.
    recompute: F32 * n * ((c.num_hidden_layers + 1) * c.hidden_size + layer + head) + grads,
  };
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

/** What a training pass will do: recompute layers or not. Throws `ENGINE_OUT_OF_MEMORY` when neither fits. */
export function planTrainingPass(c: ModelConfig, rows: number, seqLen: number, trainableBytes: number, free = freeHeapBytes()): { recompute: boolean; bytes: number } {
  const need = trainingPassBytes(c, rows, seqLen, trainableBytes);
  if (need.tape <= free) return { recompute: false, bytes: need.tape };
  if (need.recompute <= free) return { recompute: true, bytes: need.recompute };
  throw new EngineError(
    'ENGINE_OUT_OF_MEMORY',
    `a training pass over ${rows} × ${seqLen} tokens needs about ${gib(need.recompute)} of the engine's heap even recomputing layers, ` +
      `and ${gib(free)} are free: pass fewer rows at a time (a smaller micro-batch: ppo_micro_batch_size), ` +
      'shorter sequences, or raise OPENTINKER_ENGINE_MEMORY_MB (at most 4 GiB: the wasm heap)',
    'batch',
  );
}

/** The most rows of `seqLen` tokens one training pass can take within `free` bytes (recomputing layers); 0 when not even one. */
export function maxTrainingRows(c: ModelConfig, seqLen: number, trainableBytes: number, free = freeHeapBytes()): number {
  const fixed = trainingPassBytes(c, 0, seqLen, trainableBytes).recompute;
  const perRow = trainingPassBytes(c, 1, seqLen, trainableBytes).recompute - fixed;
  return Math.max(0, Math.floor((free - fixed) / perRow));
}

/** The most rows of `seqLen` tokens one scoring pass (no gradients) can take within `free` bytes; at least 1. */
export function maxScoringRows(c: ModelConfig, seqLen: number, free = freeHeapBytes()): number {
  return Math.max(1, Math.floor(free / scoringPassBytes(c, 1, seqLen)));
}
