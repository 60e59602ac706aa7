import { EngineError } from '../errors';
import { Prng } from '../util/prng';
import { headDim, type ModelConfig } from './model-config';

/** One weight: its shape (Hugging Face layout, e.g. `[out, in]` for a linear layer) and float32 values in row-major order. */
export interface WeightTensor {
  shape: number[];
  data: Float32Array;
}

/**
 * Weights by their Hugging Face names (`model.embed_tokens.weight`, `model.layers.0.self_attn.q_proj.weight`,
 * …). This is how weights move between the model (`model.exportWeights()`, `Model.fromWeights(config, weights)`)
 * and files (safetensors read/write on the I/O side). Linear weights keep PyTorch's `[out_features, in_features]`
 * layout; the model transposes internally.
 *
 * @example
 * ```ts
 * const weights: NamedWeights = initWeights(modelPreset('tiny-char'), 1);
 * weights.get('model.norm.weight')!.shape; // [128]
 * ```
 */
export type NamedWeights = Map<string, WeightTensor>;

/** The role of a weight, which decides its initialisation. */
export type WeightKind = 'embedding' | 'linear' | 'bias' | 'norm';

/** A weight the config calls for: its name, shape and kind. */
export interface WeightSpec {
  name: string;
  shape: number[];
  kind: WeightKind;
}

/** Name of a per-layer weight, e.g. `layerWeightName(3, 'mlp.up_proj.weight')`. */
export function layerWeightName(layer: number, suffix: string): string {
  return `model.layers.${layer}.${suffix}`;
}

/**
 * Every weight a config calls for, in the order Hugging Face lists them (embedding, then each layer,
 * then the final norm and the head). `lm_head.weight` is absent when `tie_word_embeddings` is true;
 * q/k/v biases are present when `attention_bias` is true.
 *
 * @example
 * ```ts
 * weightSpecs(modelPreset('tiny-test')).map((w) => w.name);
 * // ['model.embed_tokens.weight', 'model.layers.0.input_layernorm.weight', …, 'lm_head.weight']
 * ```
 */
export function weightSpecs(config: ModelConfig): WeightSpec[] {
  const d = config.hidden_size;
  const hd = headDim(config);
  const q = config.num_attention_heads * hd;
  const kv = config.num_key_value_heads * hd;
  const ff = config.intermediate_size;
  const specs: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [config.vocab_size, d], kind: 'embedding' }];
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const l = (s: string) => layerWeightName(i, s);
    specs.push({ name: l('input_layernorm.weight'), shape: [d], kind: 'norm' });
    specs.push({ name: l('self_attn.q_proj.weight'), shape: [q, d], kind: 'linear' });
    if (config.attention_bias) specs.push({ name: l('self_attn.q_proj.bias'), shape: [q], kind: 'bias' });
    specs.push({ name: l('self_attn.k_proj.weight'), shape: [kv, d], kind: 'linear' });
    if (config.attention_bias) specs.push({ name: l('self_attn.k_proj.bias'), shape: [kv], kind: 'bias' });
    specs.push({ name: l('self_attn.v_proj.weight'), shape: [kv, d], kind: 'linear' });
    if (config.attention_bias) specs.push({ name: l('self_attn.v_proj.bias'), shape: [kv], kind: 'bias' });
    specs.push({ name: l('self_attn.o_proj.weight'), shape: [d, q], kind: 'linear' });
    specs.push({ name: l('post_attention_layernorm.weight'), shape: [d], kind: 'norm' });
    specs.push({ name: l('mlp.gate_proj.weight'), shape: [ff, d], kind: 'linear' });
    specs.push({ name: l('mlp.up_proj.weight'), shape: [ff, d], kind: 'linear' });
    specs.push({ name: l('mlp.down_proj.weight'), shape: [d, ff], kind: 'linear' });
  }
  specs.push({ name: 'model.norm.weight', shape: [d], kind: 'norm' });
  if (!config.tie_word_embeddings) specs.push({ name: 'lm_head.weight', shape: [config.vocab_size, d], kind: 'linear' });
  return specs;
}

/**
 * Number of parameters of a config (tied embeddings counted once).
 *
 * @example
 * ```ts
 * countParameters(modelPreset('tiny-char')); // 837_248
 * ```
 */
export function countParameters(config: ModelConfig): number {
  return weightSpecs(config).reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
}

/**
 * Checks that `weights` holds exactly the weights of `config` with the right shapes and data lengths
 * (float32 arrays, or native tensors of any dtype).
 * Extra weights are refused unless `allowExtra` (a checkpoint may carry e.g. rotary caches some tools
 * save; `lm_head.weight` beside tied embeddings is also tolerated then). Throws `ENGINE_INVALID_WEIGHTS`
 * naming the first bad weight.
 *
 * @example
 * ```ts
 * validateWeights(config, weights); // throws EngineError('ENGINE_INVALID_WEIGHTS', …, 'model.norm.weight')
 * ```
 */
export function validateWeights(config: ModelConfig, weights: ReadonlyMap<string, WeightTensor | { shape: readonly number[]; size: number }>, allowExtra = false): void {
  const specs = weightSpecs(config);
  for (const spec of specs) {
    const w = weights.get(spec.name);
    if (!w) throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${spec.name} is missing`, spec.name);
    if (w.shape.length !== spec.shape.length || w.shape.some((v, i) => v !== spec.shape[i])) {
      throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${spec.name} has shape [${w.shape}], expected [${spec.shape}]`, spec.name);
    }
    const n = spec.shape.reduce((a, b) => a * b, 1);
    // Float32 arrays, or tensors held natively (which know their size).
    const ok = 'data' in w ? w.data instanceof Float32Array && w.data.length === n : w.size === n;
    if (!ok) {
      throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${spec.name} must hold a Float32Array of ${n} values`, spec.name);
    }
  }
  if (!allowExtra && weights.size !== specs.length) {
    const known = new Set(specs.map((s) => s.name));
    const extra = [...weights.keys()].find((k) => !known.has(k));
    throw new EngineError('ENGINE_INVALID_WEIGHTS', `unexpected weight ${extra} for this config`, extra);
  }
}

/**
 * Fresh weights for a config, reproducible from `seed`: normal(0, `initializer_range` (default 0.02))
 * for embeddings and linear weights as Hugging Face initialises them, ones for RMSNorm weights, zeros
 * for biases.
 *
 * @example
 * ```ts
 * const model = Model.fromWeights(config, initWeights(config, 42));
 * ```
 */
export function initWeights(config: ModelConfig, seed: number): NamedWeights {
  const rng = new Prng(seed);
  const std = config.initializer_range ?? 0.02;
  const out: NamedWeights = new Map();
  for (const spec of weightSpecs(config)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (spec.kind === 'norm') data.fill(1);
    else if (spec.kind !== 'bias') for (let i = 0; i < n; i++) data[i] = rng.normal() * std;
    out.set(spec.name, { shape: [...spec.shape], data });
  }
  return out;
}
