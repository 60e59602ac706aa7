import { isEngineError } from '../errors';
import type { LoraAdapter } from '../io/peft-adapter';
import { Prng } from '../util/prng';

/** `CODE:field` of the EngineError `fn` throws, `none` when it throws nothing (for refusal tests). */
export function errorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return isEngineError(e) ? `${e.code}:${e.field ?? ''}` : String(e);
  }
  return 'none';
}

/** The adapter with every lora_B drawn normal(0, `scale`) from `seed`, so it changes the model's outputs. */
export function randomisedAdapter(adapter: LoraAdapter, seed: number, scale = 0.1): LoraAdapter {
  const rng = new Prng(seed);
  const out = new Map([...adapter.weights].map(([m, f]) => [m, { A: f.A, B: { shape: f.B.shape, data: Float32Array.from(f.B.data, () => rng.normal() * scale) } }]));
  return { config: adapter.config, weights: out };
}
