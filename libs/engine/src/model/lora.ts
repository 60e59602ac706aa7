import { EngineError } from '../errors';
import { isTargetModule } from '../io/peft-adapter';
import { Prng } from '../util/prng';
import type { ModelConfig } from './model-config';
import { weightSpecs } from './weights';

/** The linear modules of a decoder layer that LoRA can target (PEFT's names, last path component). */
export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** Options of `Model.addLora`. */
export interface LoraOptions {
  /** Rank of the update (PEFT `r`). */
  r: number;
  /** Scale numerator (PEFT `lora_alpha`): the update is `(alpha / r) · B·A`. */
  alpha: number;
  /** Module names (e.g. `['q_proj', 'v_proj']`) or a regular expression over full module paths; default q/k/v/o. */
  targetModules?: string[] | string;
  /** Dropout on the adapter input; only 0 is supported (kept for PEFT's config field). */
  dropout?: number;
  /** Seed of lora_A's initialisation. */
  seed: number;
  /** rsLoRA scaling `alpha / √r`. */
  useRslora?: boolean;
}

/**
 * Module paths (`model.layers.0.self_attn.q_proj`) of a config's layer linears that `targets` selects,
 * with their base shape `[out, in]`, in weight order.
 */
export function loraModules(config: ModelConfig, targets: string[] | string): Array<{ module: string; out: number; in: number }> {
  return weightSpecs(config)
    .filter((s) => s.kind === 'linear' && s.name.startsWith('model.layers.'))
    .map((s) => ({ module: s.name.slice(0, -'.weight'.length), out: s.shape[0], in: s.shape[1] }))
    .filter((m) => isTargetModule(m.module, targets));
}

/** Checks LoRA options, throwing `ENGINE_INVALID_OPTIONS` naming the bad field. */
export function validateLoraOptions(o: LoraOptions): void {
  const bad = (field: string, message: string): never => {
    throw new EngineError('ENGINE_INVALID_OPTIONS', `LoRA ${field} ${message}`, field);
  };
  if (!Number.isInteger(o.r) || o.r <= 0) bad('r', `must be a positive integer, got ${o.r}`);
  if (!(Number.isFinite(o.alpha) && o.alpha > 0)) bad('alpha', `must be a positive number, got ${o.alpha}`);
  // Dropout would make the adapter's forward random; the engine's trainer relies on a deterministic forward.
  if ((o.dropout ?? 0) !== 0) bad('dropout', `is not supported (only 0), got ${o.dropout}`);
  if (!Number.isInteger(o.seed)) bad('seed', `must be an integer, got ${o.seed}`);
}

/**
 * lora_A `[r, in]` initialised as PEFT does (`kaiming_uniform_(a=√5)`: uniform in ±1/√in), reproducible
 * from `rng`. lora_B starts at zero, so a fresh adapter leaves the model's outputs unchanged.
 */
export function initLoraA(r: number, inFeatures: number, rng: Prng): Float32Array {
  const bound = 1 / Math.sqrt(inFeatures);
  return Float32Array.from({ length: r * inFeatures }, () => (rng.uniform() * 2 - 1) * bound);
}
