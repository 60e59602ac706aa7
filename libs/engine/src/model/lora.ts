import { EngineError } from '../errors';
import { isTargetModule } from '../io/peft-adapter';
import { Prng } from '../util/prng';
import type { ModelConfig } from './model-config';
import { weightSpecs } from './weights';

/** The linear modules of a decoder layer that LoRA can target (PEFT's names, last path component). */
export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/**
 * The output projection as a LoRA target (PEFT's module name `lm_head`, Tinker's `train_unembed`). On a
 * model with tied embeddings the adapter applies to the output projection only, as PEFT does: the input
 * embedding stays the base's.
 */
export const LORA_HEAD_MODULE = 'lm_head';

/**
 * The LoRA alpha of adapters created through Tinker's API, which has no alpha on the wire. 32, as
 * SkyRL's Tinker server and Thinking Machines' "LoRA Without Regret" use it: with the `alpha / r` scaling
 * the best learning rate is then nearly independent of the rank, so a learning rate tuned for the hosted
 * service carries over at any rank.
 */
export const TINKER_LORA_ALPHA = 32;

/** Which parts of the model a Tinker `LoraConfig` trains (`train_attn`, `train_mlp`, `train_unembed`). */
export interface TinkerLoraParts {
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
}

/**
 * PEFT target modules for Tinker's flags: attention → q/k/v/o, MLP → gate/up/down, unembedding →
 * `lm_head`. Throws `ENGINE_INVALID_OPTIONS` when none is set (Tinker requires at least one).
 *
 * @example
 * ```ts
 * tinkerLoraTargets({ trainAttn: true, trainMlp: false, trainUnembed: true }); // ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'lm_head']
 * ```
 */
export function tinkerLoraTargets(parts: TinkerLoraParts): string[] {
  const targets = [
    ...(parts.trainAttn ? ['q_proj', 'k_proj', 'v_proj', 'o_proj'] : []),
    ...(parts.trainMlp ? ['gate_proj', 'up_proj', 'down_proj'] : []),
    ...(parts.trainUnembed ? [LORA_HEAD_MODULE] : []),
  ];
  if (targets.length === 0) throw new EngineError('ENGINE_INVALID_OPTIONS', 'at least one of train_attn, train_mlp and train_unembed must be true', 'lora_config');
  return targets;
}

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
 * Every module LoRA can target in a config, with its base shape `[out, in]`: the layer linears
 * (`model.layers.0.self_attn.q_proj`, …) in weight order, then the output projection `lm_head`
 * (`[vocab, hidden]`, tied to the embedding or not).
 */
export function loraTargetableModules(config: ModelConfig): Array<{ module: string; out: number; in: number }> {
  return [
    ...weightSpecs(config)
      .filter((s) => s.kind === 'linear' && s.name.startsWith('model.layers.'))
      .map((s) => ({ module: s.name.slice(0, -'.weight'.length), out: s.shape[0], in: s.shape[1] })),
    { module: LORA_HEAD_MODULE, out: config.vocab_size, in: config.hidden_size },
  ];
}

/** The modules of {@link loraTargetableModules} that `targets` selects (PEFT's matching rules). */
export function loraModules(config: ModelConfig, targets: string[] | string): Array<{ module: string; out: number; in: number }> {
  return loraTargetableModules(config).filter((m) => isTargetModule(m.module, targets));
}

/** What an adapter costs in the engine's heap (float32 throughout). */
export interface LoraStateBytes {
  /** Entries of the factors. */
  parameters: number;
  /** The factors alone: what a snapshot for sampling holds. */
  factorBytes: number;
  /** Factors, their accumulated gradients and AdamW's two moments: what a trained adapter holds between steps. */
  trainingBytes: number;
}

/**
 * The heap an adapter of rank `r` on `targets` takes, before it exists (the service checks its limits with it).
 *
 * @example
 * ```ts
 * loraStateBytes(modelPreset('qwen2.5-0.5b'), 16, tinkerLoraTargets({ trainAttn: true, trainMlp: true, trainUnembed: false })).trainingBytes;
 * ```
 */
export function loraStateBytes(config: ModelConfig, r: number, targets: string[] | string): LoraStateBytes {
  const parameters = loraModules(config, targets).reduce((n, m) => n + r * (m.in + m.out), 0);
  return { parameters, factorBytes: 4 * parameters, trainingBytes: 16 * parameters };
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
