import { WASM_HEAP_MAX, WASM_HEAP_RESERVE } from '../kernels/wasm-heap';
import type { ModelConfig } from './model-config';
import { countParameters } from './weights';

/*
 * What full fine-tuning costs in the engine's heap. Trainable weights are tf variables, so they live in
 * the wasm heap with their gradients and AdamW's two moments: 16 bytes per parameter, before any
 * activation. Frozen weights (LoRA's base, reference policies) live outside it and cost the heap nothing.
 */

/** Float32 weight, gradient, first and second moment. */
export const FULL_FINE_TUNING_BYTES_PER_PARAMETER = 16;

/** Share of the heap's tensor budget full fine-tuning's state may take, leaving the rest to activations. */
const STATE_SHARE = 0.8;

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

/**
 * Why a model cannot be fine-tuned in full in a heap of `budgetBytes` (default: the whole wasm heap less
 * its reserve), or undefined when it can. The message names the size needed, the limit, and what to use
 * instead. Reads nothing but the config: the API checks a spec with it before a job is queued.
 *
 * @example
 * ```ts
 * fullFineTuningRefusal(modelPreset('qwen2.5-0.5b'));
 * // 'full fine-tuning of this 494M-parameter model needs 7.4 GiB of the engine's heap for weights, …'
 * ```
 */
export function fullFineTuningRefusal(config: ModelConfig, budgetBytes = WASM_HEAP_MAX - WASM_HEAP_RESERVE): string | undefined {
  const params = countParameters(config);
  const need = params * FULL_FINE_TUNING_BYTES_PER_PARAMETER;
  const limit = budgetBytes * STATE_SHARE;
  if (need <= limit) return undefined;
  const largest = Math.floor(limit / FULL_FINE_TUNING_BYTES_PER_PARAMETER / 1e6);
  return (
    `full fine-tuning of this ${Math.round(params / 1e6)}M-parameter model needs ${gib(need)} of the engine's heap for weights, gradients and AdamW moments ` +
    `(${FULL_FINE_TUNING_BYTES_PER_PARAMETER} bytes per parameter), over the ${gib(limit)} it allows for them (the wasm heap holds 4 GiB). ` +
    `Train LoRA adapters instead (model.lora: the base stays outside the heap), or fine-tune a model of at most about ${largest}M parameters in full`
  );
}
