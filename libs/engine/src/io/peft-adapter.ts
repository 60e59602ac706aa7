import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError, isEngineError } from '../errors';
import type { ModelConfig } from '../model/model-config';
import { weightSpecs, type WeightTensor } from '../model/weights';
import { SafetensorsFile, writeSafetensors, type SafetensorsFloatDtype } from './safetensors';

/**
 * PEFT LoRA adapter folders (`adapter_config.json` + `adapter_model.safetensors`), the format
 * `peft`'s `save_pretrained` writes and `PeftModel.from_pretrained`, vLLM (`--lora-modules`) and
 * llama.cpp's `convert_lora_to_gguf.py` read. Format only: training and merging live with the model.
 *
 * A module `model.layers.0.self_attn.q_proj` with weight `[out, in]` gets `lora_A` `[r, in]` and
 * `lora_B` `[out, r]`, stored as `base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight` /
 * `.lora_B.weight`; the update is `W + scaling · B·A` with `scaling = lora_alpha / r`
 * (`lora_alpha / √r` with `use_rslora`).
 */

/** The adapter_config.json fields the engine uses. */
export interface LoraAdapterConfig {
  r: number;
  lora_alpha: number;
  /** Module names (the last component, e.g. `q_proj`) or, as PEFT allows, one regular expression matched against the full module path. */
  target_modules: string[] | string;
  base_model_name_or_path: string | null;
  lora_dropout: number;
  use_rslora: boolean;
}

/** Low-rank factors of one module. */
export interface LoraFactors {
  /** `[r, in_features]` */
  A: WeightTensor;
  /** `[out_features, r]` */
  B: WeightTensor;
}

/** An adapter: config and factors by module path (`model.layers.0.self_attn.q_proj`). */
export interface LoraAdapter {
  config: LoraAdapterConfig;
  weights: Map<string, LoraFactors>;
  /** adapter_config.json as read (other fields are kept on save). */
  rawConfig?: Record<string, unknown>;
}

/**
 * The factor by which `B·A` is scaled.
 *
 * @example
 * ```ts
 * loraScaling({ r: 8, lora_alpha: 16, use_rslora: false }); // 2
 * ```
 */
export function loraScaling(config: Pick<LoraAdapterConfig, 'r' | 'lora_alpha' | 'use_rslora'>): number {
  return config.use_rslora ? config.lora_alpha / Math.sqrt(config.r) : config.lora_alpha / config.r;
}

/**
 * The safetensors key PEFT uses for a factor.
 *
 * @example
 * ```ts
 * peftKey('model.layers.0.self_attn.q_proj', 'A'); // 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'
 * ```
 */
export function peftKey(module: string, factor: 'A' | 'B'): string {
  return `base_model.model.${module}.lora_${factor}.weight`;
}

const KEY = /^base_model\.model\.(.+)\.lora_([AB])(?:\.default)?\.weight$/;

/**
 * The full output projection PEFT also saves when `lm_head` is a target (its `save_embedding_layers`
 * default). The engine applies the adapter on its own base's head, so this copy is skipped on load; the
 * engine's own adapters are written without it, as `save_pretrained(save_embedding_layers=False)` does,
 * which PEFT loads back to identical outputs.
 */
const HEAD_BASE_LAYER = 'base_model.model.lm_head.base_layer.weight';

function invalid(message: string, field?: string): never {
  throw new EngineError('ENGINE_IO', message, field);
}

/** Whether a module path is targeted, with PEFT's rules (list: exact path or last component; string: full regex match). */
export function isTargetModule(module: string, targets: string[] | string): boolean {
  if (typeof targets === 'string') return new RegExp(`^(?:${targets})$`).test(module);
  return targets.some((t) => module === t || module.endsWith(`.${t}`));
}

/**
 * Checks an adapter_config.json object. Features the engine does not apply are refused rather than
 * ignored (DoRA, per-module rank/alpha patterns, `modules_to_save`, trained biases, `fan_in_fan_out`).
 */
export function validateLoraAdapterConfig(raw: unknown, where = 'adapter_config.json'): LoraAdapterConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) invalid(`${where} must hold a JSON object`);
  const r = raw as Record<string, unknown>;
  const fail = (field: string, message: string): never => invalid(`${where}: ${field} ${message}`, field);
  if (r.peft_type !== 'LORA') fail('peft_type', `must be "LORA", got ${JSON.stringify(r.peft_type)}`);
  if (typeof r.r !== 'number' || !Number.isInteger(r.r) || r.r <= 0) fail('r', `must be a positive integer, got ${JSON.stringify(r.r)}`);
  if (typeof r.lora_alpha !== 'number' || !Number.isFinite(r.lora_alpha) || r.lora_alpha <= 0) fail('lora_alpha', `must be a positive number, got ${JSON.stringify(r.lora_alpha)}`);
  const targets = r.target_modules;
  const targetsOk = typeof targets === 'string' ? targets.length > 0 : Array.isArray(targets) && targets.length > 0 && targets.every((t) => typeof t === 'string' && t.length > 0);
  if (!targetsOk) fail('target_modules', 'must be a non-empty list of module names or a regular expression');
  if (typeof targets === 'string') {
    try {
      new RegExp(targets);
    } catch {
      fail('target_modules', `is not a valid regular expression: ${targets}`);
    }
  }
  if (r.use_dora === true) fail('use_dora', 'is not supported (DoRA adapters)');
  for (const key of ['rank_pattern', 'alpha_pattern'] as const) {
    const v = r[key];
    if (v !== undefined && v !== null && (typeof v !== 'object' || Object.keys(v as object).length > 0)) fail(key, 'is not supported (per-module ranks or alphas)');
  }
  if (r.modules_to_save !== undefined && r.modules_to_save !== null && !(Array.isArray(r.modules_to_save) && r.modules_to_save.length === 0)) {
    fail('modules_to_save', 'is not supported (fully trained extra modules)');
  }
  if (r.bias !== undefined && r.bias !== 'none') fail('bias', `must be "none", got ${JSON.stringify(r.bias)}`);
  if (r.fan_in_fan_out === true) fail('fan_in_fan_out', 'is not supported (GPT-2 style Conv1D weights)');
  if (r.lora_bias === true) fail('lora_bias', 'is not supported (LoRA biases)');
  if (r.use_qalora === true) fail('use_qalora', 'is not supported');
  for (const key of ['target_parameters', 'trainable_token_indices'] as const) {
    if (r[key] !== undefined && r[key] !== null) fail(key, 'is not supported');
  }
  const dropout = r.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || dropout < 0 || dropout >= 1) fail('lora_dropout', `must be in [0, 1), got ${JSON.stringify(dropout)}`);
  const base = r.base_model_name_or_path ?? null;
  if (base !== null && typeof base !== 'string') fail('base_model_name_or_path', 'must be a string or null');
  return {
    r: r.r as number,
    lora_alpha: r.lora_alpha as number,
    target_modules: Array.isArray(targets) ? [...(targets as string[])] : (targets as string),
    base_model_name_or_path: base as string | null,
    lora_dropout: dropout as number,
    use_rslora: r.use_rslora === true,
  };
}

/**
 * Checks factors against the adapter config (targeted modules, rank) and, given a model config, against
 * the shapes of the model's linear weights.
 */
export function validateLoraWeights(adapter: Pick<LoraAdapter, 'config' | 'weights'>, modelConfig?: ModelConfig): void {
  const { r, target_modules: targets } = adapter.config;
  const linear = modelConfig
    ? new Map(
        weightSpecs(modelConfig)
          .filter((s) => s.kind === 'linear')
          .map((s) => [s.name, s.shape]),
      )
    : null;
  // The output projection is a target whether or not it is tied to the embedding (PEFT wraps `lm_head` either way).
  if (linear && !linear.has('lm_head.weight')) linear.set('lm_head.weight', [modelConfig!.vocab_size, modelConfig!.hidden_size]);
  const bad = (module: string, message: string): never => {
    throw new EngineError('ENGINE_INVALID_WEIGHTS', `LoRA module ${module}: ${message}`, module);
  };
  if (adapter.weights.size === 0) throw new EngineError('ENGINE_INVALID_WEIGHTS', 'the adapter has no LoRA modules');
  for (const [module, { A, B }] of adapter.weights) {
    if (!isTargetModule(module, targets)) bad(module, `is not among target_modules ${JSON.stringify(targets)}`);
    const check = (t: WeightTensor, name: string) => {
      if (t.shape.length !== 2 || !(t.data instanceof Float32Array) || t.data.length !== t.shape[0] * t.shape[1]) bad(module, `lora_${name} must be a 2-D float32 tensor`);
    };
    check(A, 'A');
    check(B, 'B');
    if (A.shape[0] !== r) bad(module, `lora_A has shape [${A.shape}], expected [${r}, in_features] for r = ${r}`);
    if (B.shape[1] !== r) bad(module, `lora_B has shape [${B.shape}], expected [out_features, ${r}] for r = ${r}`);
    if (linear) {
      const base = linear.get(`${module}.weight`);
      if (!base) bad(module, `is not a linear layer of this ${modelConfig!.model_type} model`);
      if (B.shape[0] !== base![0] || A.shape[1] !== base![1]) bad(module, `factors [${B.shape[0]}, r]·[r, ${A.shape[1]}] do not match the base weight [${base}]`);
    }
  }
}

/** The adapter_config.json PEFT writes (keys sorted, as PEFT's `json.dumps(sort_keys=True)`), with this adapter's values. */
function adapterConfigJson(adapter: LoraAdapter): Record<string, unknown> {
  const c = adapter.config;
  const defaults = {
    alpha_pattern: {},
    auto_mapping: null,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: null,
    modules_to_save: null,
    rank_pattern: {},
    revision: null,
    task_type: 'CAUSAL_LM',
    use_dora: false,
  };
  // The fields the factors were made with win over a stale rawConfig.
  const own = {
    r: c.r,
    lora_alpha: c.lora_alpha,
    target_modules: c.target_modules,
    base_model_name_or_path: c.base_model_name_or_path,
    lora_dropout: c.lora_dropout,
    use_rslora: c.use_rslora,
    peft_type: 'LORA',
  };
  const merged: Record<string, unknown> = { ...defaults, ...(adapter.rawConfig ?? {}), ...own };
  return Object.fromEntries(
    Object.keys(merged)
      .sort()
      .map((k) => [k, merged[k]]),
  );
}

/**
 * Writes a PEFT adapter folder. Factors are stored in `dtype` (default F32).
 *
 * @example
 * ```ts
 * await saveLoraAdapter('out/adapter', {
 *   config: { r: 8, lora_alpha: 16, target_modules: ['q_proj', 'v_proj'], base_model_name_or_path: 'Qwen/Qwen2.5-0.5B-Instruct', lora_dropout: 0, use_rslora: false },
 *   weights: factorsByModule,
 * });
 * ```
 */
export async function saveLoraAdapter(dir: string, adapter: LoraAdapter, options: { dtype?: SafetensorsFloatDtype; modelConfig?: ModelConfig } = {}): Promise<void> {
  validateLoraAdapterConfig({ ...adapterConfigJson(adapter) }, 'adapter config');
  validateLoraWeights(adapter, options.modelConfig);
  await mkdir(dir, { recursive: true });
  const tensors: Array<[string, WeightTensor]> = [];
  for (const module of [...adapter.weights.keys()].sort()) {
    const f = adapter.weights.get(module)!;
    tensors.push([peftKey(module, 'A'), f.A], [peftKey(module, 'B'), f.B]);
  }
  await writeSafetensors(join(dir, 'adapter_model.safetensors'), tensors, { dtype: options.dtype ?? 'F32', metadata: { format: 'pt' } });
  await writeFile(join(dir, 'adapter_config.json'), `${JSON.stringify(adapterConfigJson(adapter), null, 2)}\n`);
}

/**
 * Reads a PEFT adapter folder (factors as float32), checked against `modelConfig` when given.
 *
 * @example
 * ```ts
 * const adapter = await loadLoraAdapter('out/adapter', { modelConfig: base.config });
 * adapter.weights.get('model.layers.0.self_attn.q_proj')!.A.shape; // [8, 896]
 * ```
 */
export async function loadLoraAdapter(dir: string, options: { modelConfig?: ModelConfig } = {}): Promise<LoraAdapter> {
  const configPath = join(dir, 'adapter_config.json');
  let rawText: string;
  try {
    rawText = await readFile(configPath, 'utf8');
  } catch (e) {
    invalid(`cannot read ${configPath}: ${(e as Error).message}`, configPath);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(rawText);
  } catch (e) {
    invalid(`${configPath} is not valid JSON: ${(e as Error).message}`, configPath);
  }
  const config = validateLoraAdapterConfig(raw, configPath);
  const weightsPath = join(dir, 'adapter_model.safetensors');
  const file = await SafetensorsFile.open(weightsPath);
  const parts = new Map<string, Partial<LoraFactors>>();
  try {
    for (const name of file.names) {
      if (name === HEAD_BASE_LAYER) continue;
      const m = KEY.exec(name);
      if (!m) invalid(`${weightsPath}: ${name} is not a LoRA factor (expected base_model.model.<module>.lora_A.weight / lora_B.weight)`, name);
      const entry = parts.get(m[1]) ?? {};
      const factor = m[2] as 'A' | 'B';
      if (entry[factor]) invalid(`${weightsPath}: lora_${factor} of ${m[1]} appears twice`, name);
      entry[factor] = await file.readFloat32(name);
      parts.set(m[1], entry);
    }
  } finally {
    await file.close();
  }
  const weights = new Map<string, LoraFactors>();
  for (const [module, f] of parts) {
    if (!f.A || !f.B) invalid(`${weightsPath}: ${module} has lora_${f.A ? 'A' : 'B'} but no lora_${f.A ? 'B' : 'A'}`, module);
    weights.set(module, { A: f.A, B: f.B });
  }
  const adapter: LoraAdapter = { config, weights, rawConfig: raw as Record<string, unknown> };
  try {
    validateLoraWeights(adapter, options.modelConfig);
  } catch (e) {
    if (isEngineError(e)) throw new EngineError(e.code, `${dir}: ${e.message}`, e.field);
    throw e;
  }
  return adapter;
}
