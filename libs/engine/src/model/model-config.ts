import { EngineError } from '../errors';

/**
 * The architecture of a decoder-only transformer of the Llama / Qwen2 family, with the field names of a
 * Hugging Face `config.json`, so a model folder's config is read as it is and written back unchanged
 * in meaning.
 *
 * Semantics follow `transformers`' `modeling_llama.py` / `modeling_qwen2.py`: RMSNorm before attention
 * and before the MLP, rotary positions with the rotate-half convention, grouped-query attention, SwiGLU
 * MLP (`down(silu(gate(x)) * up(x))`), final RMSNorm, output head tied to the embedding or separate.
 *
 * @example
 * ```ts
 * const config: ModelConfig = validateModelConfig(JSON.parse(fs.readFileSync('config.json', 'utf8')));
 * config.num_key_value_heads; // 2 for Qwen2.5-0.5B
 * ```
 */
export interface ModelConfig {
  model_type: 'llama' | 'qwen2';
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  /** Key/value heads for grouped-query attention; divides `num_attention_heads`. */
  num_key_value_heads: number;
  /** Per-head width; defaults to `hidden_size / num_attention_heads` when absent. */
  head_dim?: number;
  rms_norm_eps: number;
  rope_theta: number;
  max_position_embeddings: number;
  tie_word_embeddings: boolean;
  /** Biases on the q/k/v projections (Qwen2 has them; Llama has none). o_proj never has a bias. */
  attention_bias: boolean;
  hidden_act: 'silu';
  /** Standard deviation of the normal initialisation of new weights (HF default 0.02). */
  initializer_range?: number;
  bos_token_id?: number;
  /** One id or several (Qwen2.5 lists `[151645, 151643]` in generation_config.json). */
  eos_token_id?: number | number[];
  pad_token_id?: number;
}

/** `head_dim` of a config, with Hugging Face's default. */
export function headDim(config: ModelConfig): number {
  return config.head_dim ?? config.hidden_size / config.num_attention_heads;
}

function fail(field: string, message: string): never {
  throw new EngineError('ENGINE_INVALID_CONFIG', `config.${field}: ${message}`, field);
}

function positiveInt(raw: Record<string, unknown>, field: string, fallback?: number): number {
  const v = raw[field] ?? fallback;
  if (v === undefined) fail(field, 'is required');
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) fail(field, `must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

function positiveNumber(raw: Record<string, unknown>, field: string, fallback?: number): number {
  const v = raw[field] ?? fallback;
  if (v === undefined) fail(field, 'is required');
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(field, `must be a positive number, got ${JSON.stringify(v)}`);
  return v;
}

function optionalTokenId(raw: Record<string, unknown>, field: string, vocab: number): number | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= vocab) {
    fail(field, `must be a token id in [0, ${vocab}), got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Checks a parsed `config.json` (or a preset, or a job's model section) and returns a {@link ModelConfig}
 * holding only the fields the engine understands. Defaults are Hugging Face's where it has one
 * (`num_key_value_heads` = `num_attention_heads`, `rope_theta` 10000, `tie_word_embeddings` false,
 * `attention_bias` true for qwen2 and false for llama, `hidden_act` silu). Throws an
 * {@link EngineError} `ENGINE_INVALID_CONFIG` naming the field otherwise; features the engine does not
 * implement (`rope_scaling`, sliding windows, other activations) are refused rather than ignored, so a
 * model never runs with silently wrong numerics.
 *
 * @example
 * ```ts
 * const cfg = validateModelConfig({ model_type: 'llama', vocab_size: 260, hidden_size: 64,
 *   intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, rms_norm_eps: 1e-5,
 *   max_position_embeddings: 64 });
 * cfg.num_key_value_heads; // 4
 * ```
 */
export function validateModelConfig(raw: unknown): ModelConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new EngineError('ENGINE_INVALID_CONFIG', 'config must be a JSON object');
  }
  const r = raw as Record<string, unknown>;
  const modelType = r.model_type;
  if (modelType !== 'llama' && modelType !== 'qwen2') {
    fail('model_type', `must be "llama" or "qwen2", got ${JSON.stringify(modelType)}`);
  }
  const vocab_size = positiveInt(r, 'vocab_size');
  const hidden_size = positiveInt(r, 'hidden_size');
  const intermediate_size = positiveInt(r, 'intermediate_size');
  const num_hidden_layers = positiveInt(r, 'num_hidden_layers');
  const num_attention_heads = positiveInt(r, 'num_attention_heads');
  const num_key_value_heads = positiveInt(r, 'num_key_value_heads', num_attention_heads);
  if (num_attention_heads % num_key_value_heads !== 0) {
    fail('num_key_value_heads', `must divide num_attention_heads (${num_attention_heads}), got ${num_key_value_heads}`);
  }
  let head_dim: number | undefined;
  if (r.head_dim !== undefined && r.head_dim !== null) {
    head_dim = positiveInt(r, 'head_dim');
  } else if (hidden_size % num_attention_heads !== 0) {
    fail('hidden_size', `must be divisible by num_attention_heads (${num_attention_heads}) when head_dim is absent`);
  }
  const hd = head_dim ?? hidden_size / num_attention_heads;
  if (hd % 2 !== 0) fail('head_dim', `must be even for rotary positions, got ${hd}`);
  const rms_norm_eps = positiveNumber(r, 'rms_norm_eps', 1e-6);
  const rope_theta = positiveNumber(r, 'rope_theta', 10000);
  const max_position_embeddings = positiveInt(r, 'max_position_embeddings', 2048);
  const tie = r.tie_word_embeddings ?? false;
  if (typeof tie !== 'boolean') fail('tie_word_embeddings', `must be a boolean, got ${JSON.stringify(tie)}`);
  // Qwen2 always has q/k/v biases and its config.json usually does not say so.
  const bias = r.attention_bias ?? modelType === 'qwen2';
  if (typeof bias !== 'boolean') fail('attention_bias', `must be a boolean, got ${JSON.stringify(bias)}`);
  if (modelType === 'qwen2' && bias === false) fail('attention_bias', 'qwen2 models always have q/k/v biases');
  const act = r.hidden_act ?? 'silu';
  if (act !== 'silu') fail('hidden_act', `only "silu" is supported, got ${JSON.stringify(act)}`);
  if (r.rope_scaling !== undefined && r.rope_scaling !== null) {
    fail('rope_scaling', 'rope scaling is not supported (only plain rotary positions)');
  }
  if (r.use_sliding_window === true) fail('use_sliding_window', 'sliding-window attention is not supported');
  if (r.mlp_bias === true) fail('mlp_bias', 'MLP biases are not supported');
  let initializer_range: number | undefined;
  if (r.initializer_range !== undefined && r.initializer_range !== null) initializer_range = positiveNumber(r, 'initializer_range');

  const config: ModelConfig = {
    model_type: modelType,
    vocab_size,
    hidden_size,
    intermediate_size,
    num_hidden_layers,
    num_attention_heads,
    num_key_value_heads,
    ...(head_dim !== undefined ? { head_dim } : {}),
    rms_norm_eps,
    rope_theta,
    max_position_embeddings,
    tie_word_embeddings: tie,
    attention_bias: bias,
    hidden_act: 'silu',
    ...(initializer_range !== undefined ? { initializer_range } : {}),
  };
  const bos = optionalTokenId(r, 'bos_token_id', vocab_size);
  if (bos !== undefined) config.bos_token_id = bos;
  const pad = optionalTokenId(r, 'pad_token_id', vocab_size);
  if (pad !== undefined) config.pad_token_id = pad;
  const eos = r.eos_token_id;
  if (Array.isArray(eos)) {
    config.eos_token_id = eos.map((_, i) => optionalTokenId({ eos_token_id: eos[i] }, 'eos_token_id', vocab_size) as number);
  } else {
    const e = optionalTokenId(r, 'eos_token_id', vocab_size);
    if (e !== undefined) config.eos_token_id = e;
  }
  return config;
}

/**
 * A `config.json` object for a config, as `transformers` writes it (with `architectures` and
 * `torch_dtype`), so a saved folder loads in other tools. `extra` keeps fields of an original
 * config.json that the engine does not model (e.g. `sliding_window`, `use_cache`).
 *
 * @example
 * ```ts
 * fs.writeFileSync('config.json', JSON.stringify(toHfConfigJson(config), null, 2));
 * ```
 */
export function toHfConfigJson(config: ModelConfig, extra: Record<string, unknown> = {}, torchDtype = 'float32'): Record<string, unknown> {
  const architectures = config.model_type === 'qwen2' ? ['Qwen2ForCausalLM'] : ['LlamaForCausalLM'];
  return {
    ...extra,
    architectures,
    ...config,
    initializer_range: config.initializer_range ?? 0.02,
    torch_dtype: torchDtype,
  };
}

/**
 * Special tokens of the byte-level vocabulary of the `tiny-char` preset: ids 0–255 are the bytes of the
 * UTF-8 text, these follow. The byte tokenizer and its chat template (I/O side) use the same ids.
 */
export const TINY_CHAR_SPECIAL_TOKENS = {
  '<|endoftext|>': 256,
  '<|im_start|>': 257,
  '<|im_end|>': 258,
  '<|pad|>': 259,
} as const;

/** Names of the built-in presets, see {@link MODEL_PRESETS}. */
export type ModelPresetName = 'tiny-char' | 'tiny-test' | 'bench-a' | 'bench-b' | 'qwen2.5-0.5b';

/**
 * Built-in model configs.
 * - `tiny-char`: byte vocabulary (256 bytes + {@link TINY_CHAR_SPECIAL_TOKENS}), d 128, 4 layers,
 *   4 heads, SwiGLU width 352, context 128, tied head: ~0.84M parameters, docs/design.md section 4's
 *   quickstart model; trains on 2 CPU cores in minutes.
 * - `tiny-test`: a very small Qwen2-style model (GQA, biases, untied) for fast tests.
 * - `bench-a` / `bench-b`: the engine issue's benchmark sizes (vocab 64, d 128, 4 layers, 4 heads;
 *   vocab 512, d 256, 6 layers, 8 heads).
 * - `qwen2.5-0.5b`: Qwen2.5-0.5B's architecture (random weights unless loaded), for GPU benchmarks.
 */
export const MODEL_PRESETS: Readonly<Record<ModelPresetName, ModelConfig>> = {
  'tiny-char': {
    model_type: 'llama',
    vocab_size: 260,
    hidden_size: 128,
    intermediate_size: 352,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 4,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    max_position_embeddings: 128,
    tie_word_embeddings: true,
    attention_bias: false,
    hidden_act: 'silu',
    initializer_range: 0.02,
    bos_token_id: TINY_CHAR_SPECIAL_TOKENS['<|endoftext|>'],
    eos_token_id: TINY_CHAR_SPECIAL_TOKENS['<|im_end|>'],
    pad_token_id: TINY_CHAR_SPECIAL_TOKENS['<|pad|>'],
  },
  'tiny-test': {
    model_type: 'qwen2',
    vocab_size: 32,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 64,
    tie_word_embeddings: false,
    attention_bias: true,
    hidden_act: 'silu',
    initializer_range: 0.1,
  },
  'bench-a': {
    model_type: 'llama',
    vocab_size: 64,
    hidden_size: 128,
    intermediate_size: 352,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 4,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    max_position_embeddings: 128,
    tie_word_embeddings: true,
    attention_bias: false,
    hidden_act: 'silu',
    initializer_range: 0.02,
  },
  'bench-b': {
    model_type: 'llama',
    vocab_size: 512,
    hidden_size: 256,
    intermediate_size: 688,
    num_hidden_layers: 6,
    num_attention_heads: 8,
    num_key_value_heads: 8,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    max_position_embeddings: 256,
    tie_word_embeddings: true,
    attention_bias: false,
    hidden_act: 'silu',
    initializer_range: 0.02,
  },
  'qwen2.5-0.5b': {
    model_type: 'qwen2',
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    max_position_embeddings: 32768,
    tie_word_embeddings: true,
    attention_bias: true,
    hidden_act: 'silu',
    initializer_range: 0.02,
    bos_token_id: 151643,
    eos_token_id: 151643,
  },
};

/**
 * A copy of a preset's config (safe to modify), or an `ENGINE_UNKNOWN_PRESET` error listing the names.
 *
 * @example
 * ```ts
 * const config = modelPreset('tiny-char');
 * config.max_position_embeddings = 16; // docs/design.md section 4 trains with context 16
 * ```
 */
export function modelPreset(name: string): ModelConfig {
  const preset = (MODEL_PRESETS as Record<string, ModelConfig>)[name];
  if (!preset || !Object.prototype.hasOwnProperty.call(MODEL_PRESETS, name)) {
    throw new EngineError('ENGINE_UNKNOWN_PRESET', `unknown model preset "${name}"; known: ${Object.keys(MODEL_PRESETS).join(', ')}`, 'preset');
  }
  return structuredClone(preset);
}
