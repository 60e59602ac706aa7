import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { attentionInputs, groupedQueryAttention } from './attention';
import type { KvCache, KvLayer } from './kv-cache';
import { headDim, validateModelConfig, type ModelConfig } from './model-config';
import { rmsNorm } from './rms-norm';
import { applyRope, halfSwapMatrix, ropeTables } from './rope';
import { swiglu } from './swiglu';
import { addBias, addSame, scaleBy } from './elementwise';
import { hasLogProb, sliceRows, validateTokenBatch, type TokenBatch } from './token-batch';
import { freeHeapBytes, maxScoringRows } from './memory-plan';
import { initWeights, validateWeights, weightSpecs, type NamedWeights, type WeightTensor } from './weights';
import { Prng } from '../util/prng';
import { loraScaling, peftKey, validateLoraWeights, type LoraAdapter, type LoraAdapterConfig, type LoraFactors } from '../io/peft-adapter';
import { LORA_HEAD_MODULE, LORA_TARGETS, initLoraA, loraModules, loraStateBytes, validateLoraOptions, type LoraOptions } from './lora';
import {
  AdapterSnapshot,
  compileRowPlan,
  disposeLoraState,
  disposeRowPlan,
  loraStateFactorBytes,
  rowMask,
  type AdapterRef,
  type LoraFactorTensors,
  type LoraState,
  type RowAdapterPlan,
} from './lora-state';
import { loraHeadLogits, loraHeadScores, type LoraHeadFactors } from './lora-head';
import { cudaReady, engineAddon } from '../native/addon';
import { NativeTensor } from '../native/native-tensor';
import { backendRunsNativeKernels } from '../kernels/native-kernel';
import { nativeLoraMatMul, nativeMatMul } from '../kernels/native-matmul';
import { nativeLayerOps } from '../kernels/native-layer-ops';
import { nativeGatherRows } from '../kernels/native-embedding';
import { tokenScores } from '../kernels/token-scores';

/**
 * Where a Hugging Face weight lives: a tf variable in the wasm heap (layer linears stored transposed,
 * `[in, out]`, so the forward pass runs plain products), or a native tensor outside the heap in Hugging
 * Face's own layout (frozen weights: the base under LoRA, a reference policy, a model that only samples).
 */
type Slot = { variable: tf.Variable; transposed: boolean; native?: undefined } | { native: NativeTensor; variable?: undefined };

/** A 2-D weight as the forward pass uses it. */
type Matrix = { variable: tf.Variable; native?: undefined } | { native: NativeTensor; variable?: undefined };

interface LayerVars {
  inputNorm: tf.Variable;
  q: Matrix;
  k: Matrix;
  v: Matrix;
  qBias?: tf.Variable;
  kBias?: tf.Variable;
  vBias?: tf.Variable;
  o: Matrix;
  postNorm: tf.Variable;
  gate: Matrix;
  up: Matrix;
  down: Matrix;
}

/** Per-pass inputs every layer reads (positions, masks, rotary tables). @internal */
export interface PassContext {
  b: number;
  t: number;
  pastLen: number;
  cos: tf.Tensor;
  sin: tf.Tensor;
  bias: tf.Tensor;
  swap: tf.Tensor2D;
  scale: number;
}

/** The name `addLora`/`loadLora` give an adapter when none is given: the one passes use by default (PEFT's default adapter name). */
export const DEFAULT_ADAPTER = 'default';

/** The LoRA weights a pass applies: none, one adapter or snapshot for every row, or one per row. */
type Selection = { kind: 'none' } | { kind: 'one'; state: LoraState } | { kind: 'rows'; plan: RowAdapterPlan };

/** Options of {@link Model.scoreTokens}. */
export interface ScoreOptions {
  /**
   * The LoRA weights to score under: an adapter's name, a snapshot, `null` or `false` for the base alone
   * (the reference policy of a LoRA model), or one of those per row; `true` or absent: the current
   * selection (by default the default adapter).
   */
  adapter?: boolean | AdapterRef | readonly AdapterRef[];
}

/** Options of {@link Model.fromWeights}. */
export interface ModelOptions {
  /** Whether the weights are trainable variables (default true); a frozen reference policy uses false. */
  trainable?: boolean;
  /**
   * Where a frozen model keeps its matrices: `native` (default when the engine's addon is loaded and the
   * backend is wasm or cpu: outside the wasm heap, read by the addon's kernels) or `heap` (tf tensors).
   * Trainable weights are always in the heap.
   */
  placement?: 'native' | 'heap';
}

/** Weights to build a model from: float32 arrays, or tensors already held natively (ownership passes to the model). */
export type ModelWeights = Map<string, WeightTensor | NativeTensor>;

/** The linears of a layer in the order the native decoding step takes them (by their module names). @internal */
export const DECODE_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** See {@link Model.nativeDecodeInputs}. @internal */
export interface NativeDecodeInputs {
  tensors: NativeTensor[];
  norms: Float32Array;
  biases?: Float32Array;
  lora: Array<[number, number, Float32Array, Float32Array, Float32Array | null]>;
}

/** Result of one model run over new tokens. @internal */
export interface RunResult {
  /** `[rows, vocab]`: every position, or one per row with `lastOnly`; absent with `logits: false`. */
  logits?: tf.Tensor2D;
  /** `[rows, hidden]` final-norm hidden states for the same rows. */
  hidden: tf.Tensor2D;
  /** Keys/values of all positions so far (past + new), when asked for. */
  present?: KvLayer[];
}

/** Per-token log-probs and entropies of a batch, aligned with its tokens. */
export interface TokenScores {
  /**
   * `[B·T]`: `logProbs[b·T + t] = log p(ids[b][t] | ids[b][<t])` under the model at temperature 1;
   * 0 where the token has no log-prob (padding, or the first real token of a row).
   */
  logProbs: Float32Array;
  /** `[B·T]`: entropy (nats) of the distribution token t was drawn from; 0 where `logProbs` is. */
  entropy: Float32Array;
  /** `[B·T]`: 1 where the token has a log-prob. */
  valid: Uint8Array;
  /**
   * With a value head: `[B·T]`, the value for token t read at the position before it (the state the
   * token was drawn from, as verl's critic reads `values[:, -response_length - 1:-1]`); 0 where `valid` is.
   */
  values?: Float32Array;
}

/** Hugging Face name of the value head's weight (`*ForTokenClassification` with one label). */
export const VALUE_WEIGHT = 'score.weight';
/** Hugging Face name of the value head's bias. */
export const VALUE_BIAS = 'score.bias';

let nextModelId = 0;

/**
 * A decoder-only transformer of the Llama / Qwen2 family on TensorFlow.js: token embedding, per layer
 * RMSNorm → grouped-query attention with rotary positions (q/k/v biases for Qwen2) → residual →
 * RMSNorm → SwiGLU MLP → residual, final RMSNorm, and an output head tied to the embedding or not.
 * Numerics follow `transformers`' `modeling_llama.py` / `modeling_qwen2.py` (checked against a NumPy
 * float64 reference in `reference/transformer_reference.py`).
 *
 * Weights move in and out by their Hugging Face names ({@link NamedWeights}). Trainable weights are tf
 * variables in the wasm heap (layer linears held transposed, `[in, out]`, so the forward pass runs plain
 * 2-D products); a frozen model keeps its matrices outside the heap as native tensors (float32, or
 * bfloat16 / float16 as a safetensors file stores them), read by the addon's kernels, so the heap holds
 * only activations, LoRA factors and optimizer state. Call {@link Model.dispose} when done.
 *
 * @example
 * ```ts
 * await initBackend();
 * const model = Model.init(modelPreset('tiny-char'), 42);
 * const scores = model.scoreTokens(padBatch([[72, 105, 33]]));
 * scores.logProbs; // [0, log p(105 | 72), log p(33 | 72 105)]
 * model.dispose();
 * ```
 */
export class Model {
  readonly config: ModelConfig;
  readonly trainable: boolean;
  /** Where the model's matrices live (see {@link ModelOptions.placement}). */
  readonly placement: 'native' | 'heap';
  private readonly slots = new Map<string, Slot>();
  private readonly embed: Matrix;
  private readonly layers: LayerVars[] = [];
  private readonly finalNorm: tf.Variable;
  private lmHead?: Matrix;
  private valueWeight?: tf.Variable;
  private valueBias?: tf.Variable;
  private readonly id: number;
  private disposed = false;
  /** Adapters by name, over the one copy of the base weights. */
  private readonly adapters = new Map<string, LoraState>();
  private readonly snapshots = new Set<AdapterSnapshot>();
  private adapterSeq = 0;
  /** What passes apply while {@link Model.withAdapter} runs; undefined: the default adapter, if any. */
  private selection?: Selection;

  private constructor(config: ModelConfig, weights: ModelWeights, trainable: boolean, placement: 'native' | 'heap') {
    this.config = config;
    this.trainable = trainable;
    this.placement = placement;
    this.id = nextModelId++;
    try {
      const vector = (name: string): tf.Variable => {
        const w = weights.get(name)!;
        return this.makeVariable(name, w instanceof NativeTensor ? w.toFloat32() : w.data, [...w.shape], false);
      };
      const matrix = (name: string, transposed: boolean): Matrix => this.makeMatrix(name, weights.get(name)!, transposed);
      this.embed = matrix('model.embed_tokens.weight', false);
      for (let i = 0; i < config.num_hidden_layers; i++) {
        const p = `model.layers.${i}.`;
        const layer: LayerVars = {
          inputNorm: vector(`${p}input_layernorm.weight`),
          q: matrix(`${p}self_attn.q_proj.weight`, true),
          k: matrix(`${p}self_attn.k_proj.weight`, true),
          v: matrix(`${p}self_attn.v_proj.weight`, true),
          o: matrix(`${p}self_attn.o_proj.weight`, true),
          postNorm: vector(`${p}post_attention_layernorm.weight`),
          gate: matrix(`${p}mlp.gate_proj.weight`, true),
          up: matrix(`${p}mlp.up_proj.weight`, true),
          down: matrix(`${p}mlp.down_proj.weight`, true),
        };
        if (config.attention_bias) {
          layer.qBias = vector(`${p}self_attn.q_proj.bias`);
          layer.kBias = vector(`${p}self_attn.k_proj.bias`);
          layer.vBias = vector(`${p}self_attn.v_proj.bias`);
        }
        this.layers.push(layer);
      }
      this.finalNorm = vector('model.norm.weight');
      // Kept [vocab, hidden] like the embedding: the fused head reads either the same way.
      if (!config.tie_word_embeddings) this.lmHead = matrix('lm_head.weight', false);
      if (weights.has(VALUE_WEIGHT)) {
        const w = weights.get(VALUE_WEIGHT)!;
        if (w.shape.length !== 2 || w.shape[0] !== 1 || w.shape[1] !== config.hidden_size) {
          throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${VALUE_WEIGHT} has shape [${w.shape}], expected [1,${config.hidden_size}]`, VALUE_WEIGHT);
        }
        const bias = weights.get(VALUE_BIAS) ?? { shape: [1], data: new Float32Array(1) };
        if (bias.shape.length !== 1 || bias.shape[0] !== 1) {
          throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${VALUE_BIAS} has shape [${bias.shape}], expected [1]`, VALUE_BIAS);
        }
        this.valueWeight = this.makeVariable(VALUE_WEIGHT, w instanceof NativeTensor ? w.toFloat32() : w.data, [1, config.hidden_size], true);
        this.valueBias = this.makeVariable(VALUE_BIAS, bias instanceof NativeTensor ? bias.toFloat32() : bias.data, [1], false);
      }
    } catch (error) {
      this.dispose();
      throw error;
    } finally {
      // Native tensors handed in belong to the model now; those it did not keep are freed.
      const kept = new Set([...this.slots.values()].map((s) => s.native));
      for (const w of weights.values()) if (w instanceof NativeTensor && !kept.has(w)) w.dispose();
    }
  }

  private makeVariable(name: string, data: Float32Array, shape: number[], transposed: boolean): tf.Variable {
    const variable = tf.tidy(() => {
      const t = tf.tensor(data, shape, 'float32');
      return tf.variable(transposed ? tf.transpose(t) : t, this.trainable, `m${this.id}/${name}`);
    });
    this.slots.set(name, { variable, transposed });
    return variable;
  }

  /** A 2-D weight: native when the model is placed natively, else a variable (`transposed` for layer linears). */
  private makeMatrix(name: string, w: WeightTensor | NativeTensor, transposed: boolean): Matrix {
    if (this.placement === 'native') {
      const native = w instanceof NativeTensor ? w : NativeTensor.fromFloat32(w.data, w.shape);
      this.slots.set(name, { native });
      if (cudaReady()) native.toDevice();
      return { native };
    }
    return { variable: this.makeVariable(name, w instanceof NativeTensor ? w.toFloat32() : w.data, [...w.shape], transposed) };
  }

  /** Whether the model has a value head (`score.weight`, `score.bias`). */
  get hasValueHead(): boolean {
    return this.valueWeight !== undefined;
  }

  /**
   * Adds a value head for a PPO critic: a linear map from the final (normed) hidden state to one number
   * per position, named as `transformers`' `*ForTokenClassification` with one label and verl's critic
   * (`score.weight` `[1, hidden]`, `score.bias` `[1]`). Initialised normal(0, initializer_range) and 0,
   * reproducibly from `seed`. A model loaded with `score.*` weights has it already.
   *
   * @example
   * ```ts
   * const critic = Model.fromWeights(config, actorWeights);
   * critic.addValueHead(1);
   * critic.scoreTokens(batch).values; // one value per token
   * ```
   */
  addValueHead(seed: number): void {
    this.assertLive();
    if (this.valueWeight) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the model already has a value head', 'valueHead');
    const rng = new Prng(seed);
    const std = this.config.initializer_range ?? 0.02;
    const w = Float32Array.from({ length: this.config.hidden_size }, () => rng.normal() * std);
    this.valueWeight = this.makeVariable(VALUE_WEIGHT, w, [1, this.config.hidden_size], true);
    this.valueBias = this.makeVariable(VALUE_BIAS, new Float32Array(1), [1], false);
  }

  /**
   * A model from `weights` (Hugging Face names and layouts): float32 arrays, which are copied, or native
   * tensors (e.g. views of a memory-mapped safetensors file), which the model takes over. The config is
   * validated, and so are the weights against it (`ENGINE_INVALID_WEIGHTS` names a missing or misshapen
   * one; extra entries such as a tied checkpoint's `lm_head.weight` are ignored).
   *
   * @example
   * ```ts
   * const model = Model.fromWeights(config, weightsReadFromSafetensors);
   * const frozen = Model.fromWeights(config, await mapHfModelWeights(info), { trainable: false });
   * ```
   */
  static fromWeights(config: ModelConfig, weights: ModelWeights, options: ModelOptions = {}): Model {
    const checked = validateModelConfig(config);
    try {
      validateWeights(checked, weights, true);
    } catch (error) {
      for (const w of weights.values()) if (w instanceof NativeTensor) w.dispose();
      throw error;
    }
    const trainable = options.trainable ?? true;
    return new Model(checked, weights, trainable, resolvePlacement(trainable, options.placement));
  }

  /**
   * A model with fresh weights from {@link initWeights}, reproducible from `seed`.
   *
   * @example
   * ```ts
   * const model = Model.init(modelPreset('tiny-char'), 42);
   * ```
   */
  static init(config: ModelConfig, seed: number, options: ModelOptions = {}): Model {
    const checked = validateModelConfig(config);
    const trainable = options.trainable ?? true;
    return new Model(checked, initWeights(checked, seed), trainable, resolvePlacement(trainable, options.placement));
  }

  /** A weight by Hugging Face name and layout as float32 (a copy). */
  private readWeight(name: string): Float32Array {
    const slot = this.slots.get(name)!;
    if (slot.native) return slot.native.toFloat32();
    return Float32Array.from(tf.tidy(() => (slot.transposed ? tf.transpose(slot.variable) : slot.variable).dataSync() as Float32Array));
  }

  /**
   * The weights by Hugging Face name and layout (`[out, in]` linear weights), as float32 copies.
   *
   * @example
   * ```ts
   * const weights = model.exportWeights(); // then write them with the I/O side's safetensors writer
   * ```
   */
  exportWeights(): NamedWeights {
    this.assertLive();
    const out: NamedWeights = new Map();
    const specs = weightSpecs(this.config);
    if (this.valueWeight) specs.push({ name: VALUE_WEIGHT, shape: [1, this.config.hidden_size], kind: 'linear' }, { name: VALUE_BIAS, shape: [1], kind: 'bias' });
    for (const spec of specs) out.set(spec.name, { shape: [...spec.shape], data: this.readWeight(spec.name) });
    return out;
  }

  /**
   * A copy with its own variables, e.g. a frozen reference policy for KL (`{ trainable: false }`).
   *
   * @example
   * ```ts
   * const reference = policy.clone({ trainable: false });
   * ```
   */
  clone(options: ModelOptions = {}): Model {
    return Model.fromWeights(this.config, this.exportWeights(), { trainable: options.trainable ?? this.trainable, ...(options.placement ? { placement: options.placement } : {}) });
  }

  /**
   * The trainable variables by Hugging Face weight name (linear weights stored transposed); the
   * optimizer uses the names to decide weight decay. With LoRA adapters: the factors (under PEFT's
   * names) of `adapter`, or without it of the adapter the current pass selects ({@link Model.withAdapter};
   * by default the default adapter), so a trainer of an adapter leaves the base and every other adapter
   * bit-identical. A frozen adapter or a snapshot has none; a natively placed (frozen) model has none but
   * its norms, biases and value head.
   */
  namedVariables(adapter?: string): Map<string, tf.Variable> {
    this.assertLive();
    const state = adapter !== undefined ? this.adapterState(adapter) : this.singleSelection();
    const out = new Map<string, tf.Variable>();
    if (state) {
      if (state.trainable) for (const [module, f] of state.factors) out.set(peftKey(module, 'A'), f.A as tf.Variable).set(peftKey(module, 'B'), f.B as tf.Variable);
      return out;
    }
    for (const [name, slot] of this.slots) if (slot.variable) out.set(name, slot.variable);
    return out;
  }

  /** Bytes of the model's weights in the wasm heap (adapters and snapshots included) and outside it (native tensors, mapped or copied). */
  weightBytes(): { heap: number; native: number } {
    let heap = 0;
    let native = 0;
    for (const slot of this.slots.values()) {
      if (slot.native) native += slot.native.byteLength;
      else heap += slot.variable.size * 4;
    }
    for (const state of this.adapters.values()) heap += loraStateFactorBytes(state);
    for (const snapshot of this.snapshots) heap += snapshot.bytes;
    return { heap, native };
  }

  /** Whether the default adapter (the one {@link Model.addLora} attaches without a name) is attached. */
  get hasLora(): boolean {
    return this.adapters.has(DEFAULT_ADAPTER);
  }

  /** Names of the attached adapters, in the order they were attached. */
  adapterNames(): string[] {
    return [...this.adapters.keys()];
  }

  /** Whether an adapter of that name is attached. */
  hasAdapter(name: string): boolean {
    return this.adapters.has(name);
  }

  /**
   * An attached adapter's config, scaling, whether it trains, and its size (entries of the factors and
   * their heap bytes; a trained adapter holds about four times the bytes with gradients and AdamW moments).
   */
  adapterInfo(name: string = DEFAULT_ADAPTER): { config: LoraAdapterConfig; scaling: number; trainable: boolean; parameters: number; bytes: number } {
    this.assertLive();
    const state = this.adapterState(name);
    const bytes = loraStateFactorBytes(state);
    return { config: { ...state.config }, scaling: state.scaling, trainable: state.trainable, parameters: bytes / 4, bytes };
  }

  /**
   * Attaches a fresh LoRA adapter: each targeted linear computes `W·x + (alpha/r)·B·(A·x)`, with `A`
   * `[r, in]` Kaiming-uniform (as PEFT) and `B` `[out, r]` zeros, so outputs are unchanged until it
   * trains. Targets are the layer linears and `lm_head` (the output projection, also when tied to the
   * embedding). Without a name it is the default adapter, which passes use unless told otherwise; a model
   * holds any number of named adapters over one copy of its base weights, each selected per call
   * ({@link Model.withAdapter}, the `adapter` options of scoring, sampling and {@link Trainer}). Refused
   * with `ENGINE_OUT_OF_MEMORY` when the adapter's factors, gradients and AdamW moments would not fit the
   * heap's free bytes.
   *
   * @example
   * ```ts
   * model.addLora({ r: 8, alpha: 16, targetModules: ['q_proj', 'v_proj'], seed: 1 });
   * const trainer = new Trainer(model, { lr: 1e-3 });
   * model.addLora({ r: 16, alpha: 32, targetModules: ['q_proj', 'lm_head'], seed: 2 }, 'client-2');
   * const second = new Trainer(model, { lr: 1e-4, adapter: 'client-2' });
   * ```
   */
  addLora(options: LoraOptions, name: string = DEFAULT_ADAPTER): void {
    this.assertLive();
    validateLoraOptions(options);
    this.checkNewAdapterName(name);
    const targets = options.targetModules ?? ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
    const modules = loraModules(this.config, targets);
    if (modules.length === 0) {
      throw new EngineError(
        'ENGINE_INVALID_OPTIONS',
        `LoRA targetModules ${JSON.stringify(targets)} match no linear (${[...LORA_TARGETS, LORA_HEAD_MODULE].join(', ')})`,
        'targetModules',
      );
    }
    this.ensureAdapterRoom(name, loraStateBytes(this.config, options.r, targets).trainingBytes, options.r);
    const rng = new Prng(options.seed);
    const weights = new Map<string, LoraFactors>();
    for (const m of modules) {
      weights.set(m.module, {
        A: { shape: [options.r, m.in], data: initLoraA(options.r, m.in, rng) },
        B: { shape: [m.out, options.r], data: new Float32Array(m.out * options.r) },
      });
    }
    const config = { r: options.r, lora_alpha: options.alpha, target_modules: targets, base_model_name_or_path: null, lora_dropout: 0, use_rslora: options.useRslora ?? false };
    this.loadLora({ config, weights }, name);
  }

  /**
   * Attaches an adapter read by `loadLoraAdapter` (checked against this model's shapes), as the default
   * adapter or under `name`. With `trainable: false` its factors are frozen tensors (an adapter that only
   * samples: a quarter of a trained one's heap).
   *
   * @example
   * ```ts
   * model.loadLora(await loadLoraAdapter('out/adapter', { modelConfig: model.config }));
   * model.loadLora(await loadLoraAdapter('out/step-10', { modelConfig: model.config }), 'sampler-10', { trainable: false });
   * ```
   */
  loadLora(adapter: LoraAdapter, name: string = DEFAULT_ADAPTER, options: { trainable?: boolean } = {}): void {
    this.assertLive();
    this.checkNewAdapterName(name);
    validateLoraWeights(adapter, this.config);
    const trainable = options.trainable ?? true;
    let parameters = 0;
    for (const f of adapter.weights.values()) parameters += f.A.data.length + f.B.data.length;
    this.ensureAdapterRoom(name, (trainable ? 16 : 4) * parameters, adapter.config.r);
    const seq = this.adapterSeq++;
    const factors = new Map<string, LoraFactorTensors>();
    try {
      for (const [module, f] of adapter.weights) {
        const [A, B] = tf.tidy(() => {
          const a = tf.transpose(tf.tensor2d(f.A.data, f.A.shape as [number, number])) as tf.Tensor2D;
          const b = tf.transpose(tf.tensor2d(f.B.data, f.B.shape as [number, number])) as tf.Tensor2D;
          if (!trainable) return [a, b];
          return [tf.variable(a, true, `m${this.id}/a${seq}/${peftKey(module, 'A')}`), tf.variable(b, true, `m${this.id}/a${seq}/${peftKey(module, 'B')}`)] as tf.Tensor2D[];
        });
        factors.set(module, { A, B });
      }
    } catch (error) {
      for (const f of factors.values()) tf.dispose([f.A, f.B]);
      throw error;
    }
    this.adapters.set(name, {
      config: { ...adapter.config },
      scaling: loraScaling(adapter.config),
      factors,
      trainable,
      ...(adapter.rawConfig ? { rawConfig: adapter.rawConfig } : {}),
    });
  }

  /**
   * An adapter (default: the default one) or a snapshot in PEFT layout (`A` `[r, in]`, `B` `[out, r]`),
   * ready for `saveLoraAdapter`.
   *
   * @example
   * ```ts
   * await saveLoraAdapter('out/adapter', model.exportLora('Qwen/Qwen2.5-0.5B-Instruct'), { modelConfig: model.config });
   * await saveLoraAdapter('out/client-2', model.exportLora('Qwen/Qwen2.5-0.5B-Instruct', 'client-2'), { modelConfig: model.config });
   * ```
   */
  exportLora(baseModelNameOrPath?: string, adapter: string | AdapterSnapshot = DEFAULT_ADAPTER): LoraAdapter {
    this.assertLive();
    const lora = typeof adapter === 'string' ? this.adapterState(adapter) : this.resolveRef(adapter)!;
    const weights = new Map<string, LoraFactors>();
    const read = (v: tf.Tensor) => {
      const t = tf.tidy(() => tf.transpose(v));
      const data = Float32Array.from(t.dataSync() as Float32Array);
      const shape = [...t.shape];
      t.dispose();
      return { shape, data };
    };
    for (const [module, f] of lora.factors) weights.set(module, { A: read(f.A), B: read(f.B) });
    const config = { ...lora.config, ...(baseModelNameOrPath !== undefined ? { base_model_name_or_path: baseModelNameOrPath } : {}) };
    return { config, weights, ...(lora.rawConfig ? { rawConfig: lora.rawConfig } : {}) };
  }

  /**
   * An immutable copy of an adapter's factors (default: the default adapter) to sample from while the
   * adapter trains on: it costs the factors' bytes only, any number can be alive, and each is freed with
   * its `dispose()` (or with the model). Use it wherever an adapter is selected.
   *
   * @example
   * ```ts
   * const step10 = model.snapshotAdapter('client-2');
   * trainer.trainStep(batch, coefficients);              // the adapter moves on; step10 does not
   * sample(model, prompts, { maxNewTokens: 16, adapter: step10 });
   * step10.dispose();
   * ```
   */
  snapshotAdapter(name: string = DEFAULT_ADAPTER): AdapterSnapshot {
    this.assertLive();
    const state = this.adapterState(name);
    const bytes = loraStateFactorBytes(state);
    this.ensureAdapterRoom(name, bytes, state.config.r, 'a snapshot of');
    const factors = new Map<string, LoraFactorTensors>();
    // tfjs tensors are immutable and an optimizer step assigns new values to the variables, so a clone keeps these.
    for (const [module, f] of state.factors)
      factors.set(
        module,
        tf.tidy(() => ({ A: tf.clone(f.A), B: tf.clone(f.B) })),
      );
    const snapshot = new AdapterSnapshot(
      name,
      { config: { ...state.config }, scaling: state.scaling, factors, trainable: false, ...(state.rawConfig ? { rawConfig: state.rawConfig } : {}) },
      this,
      (s) => this.snapshots.delete(s),
    );
    this.snapshots.add(snapshot);
    return snapshot;
  }

  /**
   * Folds the default adapter into the base, `W' = W + scaling·B·A`, and removes it (a native base becomes
   * float32, whatever it was stored as): the model then runs without the extra matmuls and {@link Model.exportWeights} holds the merged weights (a plain Hugging
   * Face checkpoint). {@link Model.namedVariables} lists the base weights again. An `lm_head` adapter on
   * tied embeddings gives the model its own output projection (`tie_word_embeddings` becomes false), so the
   * input embedding keeps the base's values, as the unmerged adapter had them. Refused while other adapters
   * or snapshots share the base.
   *
   * @example
   * ```ts
   * model.mergeLora();
   * await saveHfModelDir('out/merged', { config: model.config, weights: model.exportWeights() });
   * ```
   */
  mergeLora(): void {
    this.assertLive();
    const lora = this.adapterState(DEFAULT_ADAPTER);
    if (this.adapters.size > 1 || this.snapshots.size > 0) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', 'cannot merge the default adapter while other adapters or snapshots share the base weights (remove them first)', 'adapter');
    }
    for (const [module, f] of lora.factors) {
      if (module === LORA_HEAD_MODULE) {
        this.mergeHead(f, lora.scaling);
        continue;
      }
      const name = `${module}.weight`;
      const slot = this.slots.get(name)!;
      if (slot.variable) {
        const w = slot.variable;
        tf.tidy(() => w.assign(tf.add(w, tf.mul(tf.matMul(f.A, f.B), lora.scaling))));
        continue;
      }
      // A native base is replaced by a float32 copy with the update folded in (W is [out, in]: add Bᵀ·Aᵀ's transpose).
      const native = this.mergedNative(slot.native, f, lora.scaling);
      slot.native.dispose();
      this.slots.set(name, { native });
      this.replaceMatrix(slot.native, native);
    }
    this.dropAdapter(DEFAULT_ADAPTER);
  }

  /** `W + scaling·(A·B)ᵀ` of a native `[out, in]` weight, as a new float32 native tensor. */
  private mergedNative(w: NativeTensor, f: LoraFactorTensors, scaling: number, data = w.toFloat32()): NativeTensor {
    const merged = tf.tidy(() => tf.add(tf.tensor2d(data, w.shape as [number, number]), tf.mul(tf.transpose(tf.matMul(f.A, f.B)), scaling)).dataSync() as Float32Array);
    const native = NativeTensor.fromFloat32(merged, w.shape);
    if (cudaReady()) native.toDevice();
    return native;
  }

  /** Folds an `lm_head` adapter into the output projection, untying it from the embedding first when tied. */
  private mergeHead(f: LoraFactorTensors, scaling: number): void {
    const head = this.lmHead;
    if (head?.variable) {
      const w = head.variable;
      tf.tidy(() => w.assign(tf.add(w, tf.mul(tf.transpose(tf.matMul(f.A, f.B)), scaling))));
      return;
    }
    if (head?.native) {
      const native = this.mergedNative(head.native, f, scaling);
      head.native.dispose();
      this.slots.set('lm_head.weight', { native });
      this.lmHead = { native };
      return;
    }
    const shape = [this.config.vocab_size, this.config.hidden_size];
    const embed = this.embed.native ? this.embed.native.toFloat32() : Float32Array.from(this.embed.variable.dataSync() as Float32Array);
    const merged = tf.tidy(() => tf.add(tf.tensor2d(embed, shape as [number, number]), tf.mul(tf.transpose(tf.matMul(f.A, f.B)), scaling)).dataSync() as Float32Array);
    this.lmHead = this.makeMatrix('lm_head.weight', { shape, data: Float32Array.from(merged) }, false);
    (this as { config: ModelConfig }).config = { ...this.config, tie_word_embeddings: false };
  }

  /** Detaches and frees an adapter (default: the default one) without merging it; its snapshots stay valid. */
  removeLora(name: string = DEFAULT_ADAPTER): void {
    this.assertLive();
    this.adapterState(name);
    this.dropAdapter(name);
  }

  /**
   * Runs `fn` with the LoRA weights its passes use set to `adapter`: an adapter's name, a snapshot, `null`
   * for the base alone, or one of those per row of the batch the passes run on. Rows with different
   * adapters share each pass over the base weights (each linear adds `((x·A) ⊙ mask)·B` over the adapters'
   * factors side by side). Scoring, sampling and a {@link Trainer} of an adapter select theirs through
   * their options; this is the primitive under them. Not for use across an `await`.
   *
   * @example
   * ```ts
   * const ref = model.withAdapter(null, () => model.scoreTokens(batch));            // the base model
   * const two = model.withAdapter(['client-1', 'client-2'], () => model.logits(batch)); // row 0, row 1
   * ```
   */
  withAdapter<T>(adapter: AdapterRef | readonly AdapterRef[], fn: () => T): T {
    this.assertLive();
    const before = this.selection;
    let plan: RowAdapterPlan | undefined;
    if (Array.isArray(adapter)) {
      const states = (adapter as readonly AdapterRef[]).map((a) => this.resolveRef(a));
      if (states.length === 0) throw new EngineError('ENGINE_INVALID_OPTIONS', 'per-row adapters need at least one row', 'adapter');
      if (states.every((s) => s === states[0])) {
        this.selection = states[0] ? { kind: 'one', state: states[0] } : { kind: 'none' };
      } else {
        plan = compileRowPlan(states);
        this.selection = { kind: 'rows', plan };
      }
    } else {
      const state = this.resolveRef(adapter as AdapterRef);
      this.selection = state ? { kind: 'one', state } : { kind: 'none' };
    }
    try {
      return fn();
    } finally {
      this.selection = before;
      if (plan) disposeRowPlan(plan);
    }
  }

  /**
   * Runs `fn` with no adapter: the base model alone, i.e. the reference policy for KL under a LoRA
   * without a second copy of the weights. Not for use across an `await`.
   *
   * @example
   * ```ts
   * const ref = model.withoutAdapter(() => model.scoreTokens(batch));
   * ```
   */
  withoutAdapter<T>(fn: () => T): T {
    return this.withAdapter(null, fn);
  }

  private checkNewAdapterName(name: string): void {
    if (typeof name !== 'string' || name.length === 0) throw new EngineError('ENGINE_INVALID_OPTIONS', 'an adapter name must be a non-empty string', 'adapter');
    if (this.adapters.has(name)) {
      const what = name === DEFAULT_ADAPTER ? 'a LoRA adapter (merge or remove it first)' : `a LoRA adapter named "${name}"`;
      throw new EngineError('ENGINE_INVALID_OPTIONS', `the model already has ${what}`, 'lora');
    }
  }

  /** Refuses, before allocating, an adapter state that the heap's free bytes cannot hold. */
  private ensureAdapterRoom(name: string, bytes: number, r: number, what = 'adapter'): void {
    const free = freeHeapBytes();
    if (bytes <= free) return;
    const mib = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MiB`;
    throw new EngineError(
      'ENGINE_OUT_OF_MEMORY',
      `${what === 'adapter' ? 'adapter' : `${what} adapter`} "${name}" (rank ${r}) needs ${mib(bytes)} of the engine's heap` +
        `${what === 'adapter' ? ' for its factors, gradients and AdamW moments' : ''} and ${mib(Math.max(0, free))} are free: ` +
        'remove adapters or snapshots, lower the rank or the targeted modules, or raise OPENTINKER_ENGINE_MEMORY_MB (at most 4 GiB: the wasm heap)',
      'memory',
    );
  }

  private adapterState(name: string): LoraState {
    const state = this.adapters.get(name);
    if (state) return state;
    if (name === DEFAULT_ADAPTER) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the model has no LoRA adapter', 'lora');
    throw new EngineError('ENGINE_INVALID_OPTIONS', `the model has no adapter named "${name}" (adapters: ${this.adapterNames().join(', ') || 'none'})`, 'adapter');
  }

  /** The LoRA weights a reference names (undefined for `null`: the base alone). */
  private resolveRef(ref: AdapterRef): LoraState | undefined {
    if (ref === null) return undefined;
    if (typeof ref === 'string') return this.adapterState(ref);
    if (!(ref instanceof AdapterSnapshot) || ref.owner !== this) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the snapshot belongs to another model', 'adapter');
    return ref.live();
  }

  /** What the current pass applies: the selection, or by default the default adapter. */
  private current(): Selection {
    if (this.selection) return this.selection;
    const state = this.adapters.get(DEFAULT_ADAPTER);
    return state ? { kind: 'one', state } : { kind: 'none' };
  }

  /** The one adapter the current pass applies to every row (undefined: none). */
  private singleSelection(): LoraState | undefined {
    const sel = this.current();
    if (sel.kind === 'rows') throw new EngineError('ENGINE_INVALID_OPTIONS', 'a pass with a different adapter per row has no single set of trainable factors', 'adapter');
    return sel.kind === 'one' ? sel.state : undefined;
  }

  private dropAdapter(name: string): void {
    const state = this.adapters.get(name);
    if (!state) return;
    disposeLoraState(state);
    this.adapters.delete(name);
  }

  /** Points the layer that used `old` at `replacement` (after a merge). */
  private replaceMatrix(old: NativeTensor, replacement: NativeTensor): void {
    for (const layer of this.layers) {
      for (const key of ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const) if (layer[key].native === old) layer[key] = { native: replacement };
    }
  }

  /**
   * `x·W` for a layer linear (`[in, out]` variable or native `[out, in]`), plus the selected adapter's
   * `scaling·(x·A)·B` when it targets `module`, or each row's adapter's under a per-row selection.
   */
  private linear(x: tf.Tensor2D, w: Matrix, module: string): tf.Tensor2D {
    const term = this.loraTerm(x, module);
    // A native weight takes the LoRA term into its product's output (one intermediate instead of three).
    if (term && w.native && nativeLayerOps()) return nativeLoraMatMul(x, w.native, term.u, term.b) as tf.Tensor2D;
    const y = (w.native ? nativeMatMul(x, w.native) : tf.matMul(x, w.variable)) as tf.Tensor2D;
    return term ? addSame(y, tf.matMul(term.u, term.b) as tf.Tensor2D) : y;
  }

  /** The LoRA term of `module` in the current pass as `u · b` (`u = x · A` `[rows, r]`), if it has one. */
  private loraTerm(x: tf.Tensor2D, module: string): { u: tf.Tensor2D; b: tf.Tensor2D } | undefined {
    const sel = this.current();
    if (sel.kind === 'one') {
      const f = sel.state.factors.get(module);
      // The scaling goes on B ([r, out]), not on the product ([rows, out]): the same value, and its
      // multiply and the gradient's touch r·out numbers instead of a row's worth per token.
      return f && { u: tf.matMul(x, f.A), b: scaleBy(f.B, sel.state.scaling) };
    }
    if (sel.kind === 'rows') {
      const e = sel.plan.modules.get(module);
      return e && { u: tf.mul(tf.matMul(x, e.A), rowMask(sel.plan, e.mask, x.shape[0])) as tf.Tensor2D, b: e.B as tf.Tensor2D };
    }
    return undefined;
  }

  /** The unembedding LoRA the current pass applies to `n` rows of final hidden states, if any. */
  private headFactors(n: number): LoraHeadFactors | undefined {
    const sel = this.current();
    if (sel.kind === 'one') {
      const f = sel.state.factors.get(LORA_HEAD_MODULE);
      return f && { A: f.A, B: tf.mul(f.B, sel.state.scaling) };
    }
    if (sel.kind === 'rows') {
      const e = sel.plan.modules.get(LORA_HEAD_MODULE);
      return e && { A: e.A, B: e.B, mask: rowMask(sel.plan, e.mask, n) };
    }
    return undefined;
  }

  /** Frees the model's variables and native tensors. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const slot of this.slots.values()) {
      if (slot.native) slot.native.dispose();
      else slot.variable.dispose();
    }
    this.slots.clear();
    for (const name of [...this.adapters.keys()]) this.dropAdapter(name);
    for (const snapshot of [...this.snapshots]) snapshot.dispose();
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  private assertLive(): void {
    if (this.disposed) throw new EngineError('ENGINE_DISPOSED', 'the model was disposed');
  }

  /**
   * What every layer of a pass reads: positions (real tokens before each one), the additive attention
   * mask and the rotary tables, for `t` new tokens per row after `pastLen` cached ones. The caller owns
   * the tensors (use inside `tf.tidy`). @internal
   */
  passContext(keyMask: Uint8Array, b: number, pastLen: number, t: number): PassContext {
    const hd = headDim(this.config);
    const { positions, bias } = attentionInputs(keyMask, b, pastLen, t);
    const { cos, sinSigned } = ropeTables(positions, hd, this.config.rope_theta);
    return {
      b,
      t,
      pastLen,
      cos: tf.tensor4d(cos, [b, t, 1, hd]),
      sin: tf.tensor4d(sinSigned, [b, t, 1, hd]),
      bias: tf.tensor(bias, [b, 1, 1, t, pastLen + t]),
      swap: tf.tensor2d(halfSwapMatrix(hd), [hd, hd]),
      scale: 1 / Math.sqrt(hd),
    };
  }

  /** Embedding rows of `ids` (`[n]` int32) as `[n, hidden]`. @internal */
  embedIds(ids: tf.Tensor1D): tf.Tensor2D {
    return (this.embed.native ? nativeGatherRows(this.embed.native, ids) : tf.gather(this.embed.variable, ids)) as tf.Tensor2D;
  }

  /**
   * Decoder layer `i` on `x` (`[B·T, hidden]`), after the cached keys/values `past` of that layer when
   * given. Returns the new hidden states and the layer's keys/values (past + new). @internal
   */
  layerForward(i: number, x: tf.Tensor2D, ctx: PassContext, past?: KvLayer): { x: tf.Tensor2D; k: tf.Tensor; v: tf.Tensor } {
    const c = this.config;
    const L = this.layers[i];
    const { b, t } = ctx;
    const hd = headDim(c);
    const p = `model.layers.${i}.`;
    const a = rmsNorm(x, L.inputNorm, c.rms_norm_eps) as tf.Tensor2D;
    let q: tf.Tensor = this.linear(a, L.q, `${p}self_attn.q_proj`);
    let k: tf.Tensor = this.linear(a, L.k, `${p}self_attn.k_proj`);
    let v: tf.Tensor = this.linear(a, L.v, `${p}self_attn.v_proj`);
    if (L.qBias) q = addBias(q, L.qBias as tf.Tensor1D);
    if (L.kBias) k = addBias(k, L.kBias as tf.Tensor1D);
    if (L.vBias) v = addBias(v, L.vBias as tf.Tensor1D);
    q = scaleBy(applyRope(tf.reshape(q, [b, t, c.num_attention_heads, hd]), ctx.cos, ctx.sin, ctx.swap), ctx.scale);
    k = tf.transpose(applyRope(tf.reshape(k, [b, t, c.num_key_value_heads, hd]), ctx.cos, ctx.sin, ctx.swap), [0, 2, 1, 3]);
    v = tf.transpose(tf.reshape(v, [b, t, c.num_key_value_heads, hd]), [0, 2, 1, 3]);
    if (past) {
      k = tf.concat([past.k, k], 2);
      v = tf.concat([past.v, v], 2);
    }
    const attn = groupedQueryAttention(q, k, v, ctx.bias);
    let out = addSame(x, this.linear(attn, L.o, `${p}self_attn.o_proj`));
    const m = rmsNorm(out, L.postNorm, c.rms_norm_eps) as tf.Tensor2D;
    out = addSame(
      out,
      swiglu(
        m,
        (h) => this.linear(h, L.gate, `${p}mlp.gate_proj`),
        (h) => this.linear(h, L.up, `${p}mlp.up_proj`),
        (h) => this.linear(h, L.down, `${p}mlp.down_proj`),
      ),
    );
    return { x: out, k, v };
  }

  /** The final RMSNorm of hidden states. @internal */
  finalHidden(x: tf.Tensor2D): tf.Tensor2D {
    return rmsNorm(x, this.finalNorm, this.config.rms_norm_eps) as tf.Tensor2D;
  }

  /** The output head's weight, `[vocab, hidden]` (the embedding when tied). */
  private get head(): Matrix {
    return this.lmHead ?? this.embed;
  }

  /** Logits `[n, vocab]` of final hidden states. @internal */
  headLogits(hidden: tf.Tensor2D): tf.Tensor2D {
    const w = this.head;
    const lora = this.headFactors(hidden.shape[0]);
    if (lora) return loraHeadLogits(hidden, w.native ?? (w.variable as tf.Tensor2D), lora);
    return (w.native ? nativeMatMul(hidden, w.native) : tf.matMul(hidden, w.variable, false, true)) as tf.Tensor2D;
  }

  /**
   * What the native decoding step (`sampling/native-decoding.ts`) needs to run this model under the
   * current adapter selection, for `rows` rows: the native weights (per layer q, k, v, o, gate, up, down,
   * then the embedding and the head), the norms and biases as they are now, and the LoRA terms
   * (`[slot, r, A, B, mask]`, slot = layer·7 + linear, or layers·7 for the head, scaling folded into B).
   * Undefined when the model's matrices are not all native (a trainable model) or run on the GPU. @internal
   */
  nativeDecodeInputs(rows: number): NativeDecodeInputs | undefined {
    this.assertLive();
    if (this.placement !== 'native' || cudaReady()) return undefined;
    const c = this.config;
    const tensors: NativeTensor[] = [];
    for (const L of this.layers) for (const w of [L.q, L.k, L.v, L.o, L.gate, L.up, L.down]) tensors.push(w.native!);
    tensors.push(this.embed.native!, this.head.native!);
    const read = (v: tf.Variable) => v.dataSync() as Float32Array;
    const norms = new Float32Array((2 * c.num_hidden_layers + 1) * c.hidden_size);
    this.layers.forEach((L, i) => {
      norms.set(read(L.inputNorm), 2 * i * c.hidden_size);
      norms.set(read(L.postNorm), (2 * i + 1) * c.hidden_size);
    });
    norms.set(read(this.finalNorm), 2 * c.num_hidden_layers * c.hidden_size);
    let biases: Float32Array | undefined;
    if (this.layers[0].qBias) {
      const parts = this.layers.flatMap((L) => [read(L.qBias!), read(L.kBias!), read(L.vBias!)]);
      biases = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        biases.set(p, at);
        at += p.length;
      }
    }
    const slotOf = (module: string): number => {
      if (module === LORA_HEAD_MODULE) return c.num_hidden_layers * DECODE_LINEARS.length;
      const m = /^model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)$/.exec(module)!;
      return Number(m[1]) * DECODE_LINEARS.length + DECODE_LINEARS.indexOf(m[2] as (typeof DECODE_LINEARS)[number]);
    };
    const lora: NativeDecodeInputs['lora'] = [];
    const sel = this.current();
    if (sel.kind === 'one') {
      for (const [module, f] of sel.state.factors) {
        const B = Float32Array.from(f.B.dataSync() as Float32Array, (x) => x * sel.state.scaling);
        lora.push([slotOf(module), f.A.shape[1], Float32Array.from(f.A.dataSync() as Float32Array), B, null]);
      }
    } else if (sel.kind === 'rows') {
      if (sel.plan.rows !== rows) throw new EngineError('ENGINE_INVALID_INPUT', `per-row adapters for ${sel.plan.rows} rows, decoding ${rows}`, 'adapter');
      for (const [module, e] of sel.plan.modules) {
        const read32 = (t: tf.Tensor) => Float32Array.from(t.dataSync() as Float32Array);
        lora.push([slotOf(module), e.A.shape[1], read32(e.A), read32(e.B), read32(e.mask)]);
      }
    }
    return { tensors, norms, ...(biases ? { biases } : {}), lora };
  }

  /**
   * The trainable variables a decoder layer reads (its LoRA factors, or its weights when the model
   * trains in full), for a pass that differentiates one layer at a time. @internal
   */
  layerVariables(i: number): tf.Variable[] {
    const prefix = `model.layers.${i}.`;
    return [...this.namedVariables()].filter(([name]) => name.startsWith(`${prefix}`) || name.startsWith(`base_model.model.${prefix}`)).map(([, v]) => v);
  }

  /**
   * Runs new tokens `ids` (`[B, T]`, int32) through the model, after the cached ones in `past` when
   * given. `keyMask` is `[B, past + T]` (1 = real token). Must be called inside `tf.tidy` (the caller owns
   * every tensor it returns). With `lastOnly`, logits and hidden states are for each row's last
   * position only; with `logits: false` no logits are computed (the fused head reads `hidden`). Each
   * layer runs in its own scope, so a pass without gradients holds one layer's intermediates at a time.
   * @internal
   */
  run(ids: tf.Tensor2D, keyMask: Uint8Array, past: KvCache | undefined, opts: { lastOnly?: boolean; present?: boolean; logits?: boolean } = {}): RunResult {
    this.assertLive();
    const [b, t] = ids.shape;
    const ctx = this.passContext(keyMask, b, past ? past.length : 0, t);
    let x = this.embedIds(tf.reshape(ids, [b * t]) as tf.Tensor1D);
    const present: KvLayer[] = [];
    for (let i = 0; i < this.layers.length; i++) {
      const input = x;
      const out = tf.tidy(() => {
        const r = this.layerForward(i, input, ctx, past?.layers[i]);
        return opts.present ? [r.x, r.k, r.v] : [r.x];
      });
      input.dispose();
      x = out[0] as tf.Tensor2D;
      if (opts.present) present.push({ k: out[1], v: out[2] });
    }
    if (opts.lastOnly && t > 1) {
      const last = new Int32Array(b).map((_, row) => row * t + t - 1);
      x = tf.gather(x, tf.tensor1d(last, 'int32'));
    }
    const hidden = this.finalHidden(x);
    const logits = opts.logits === false ? undefined : this.headLogits(hidden);
    return { hidden, ...(logits ? { logits } : {}), ...(opts.present ? { present } : {}) };
  }

  /**
   * Logits `[B·T, vocab]` for every position of a batch (row-major, position `t` predicts token `t+1`).
   * The caller owns the tensor (use inside `tf.tidy`).
   *
   * @example
   * ```ts
   * const top = tf.tidy(() => tf.argMax(model.logits(batch), -1).dataSync());
   * ```
   */
  logits(batch: TokenBatch): tf.Tensor2D {
    validateTokenBatch(batch, this.config.vocab_size);
    return tf.tidy(() => this.run(tf.tensor2d(batch.ids, [batch.batchSize, batch.seqLen], 'int32'), batch.mask, undefined).logits!);
  }

  /**
   * Next-token log-probs `[B·T]` and entropies `[B·T]` as tensors, position-aligned (entry `t` is about
   * predicting token `t+1`; the last position of a row predicts nothing and gets target 0). Differentiable:
   * the trainer builds its loss on these. Must be called inside `tf.tidy`. @internal
   */
  nextTokenScores(batch: TokenBatch): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D; values?: tf.Tensor1D; hidden: tf.Tensor2D } {
    const { batchSize: b, seqLen: t } = batch;
    const fused = fusedHead();
    const { hidden, logits } = this.run(tf.tensor2d(batch.ids, [b, t], 'int32'), batch.mask, undefined, { logits: !fused });
    return { ...this.scoresOf(hidden, batch, logits), hidden };
  }

  /**
   * Next-token log-probs and entropies of final hidden states `[B·T, hidden]` (position-aligned), and
   * values with a value head: the fused native head when the addon runs, else a log-softmax of `logits`
   * (computed here when not given). @internal
   */
  scoresOf(hidden: tf.Tensor2D, batch: TokenBatch, logits?: tf.Tensor2D): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D; values?: tf.Tensor1D } {
    const { batchSize: b, seqLen: t } = batch;
    const ids = batch.targets ?? batch.ids;
    const n = b * t;
    const values = this.valueWeight ? (tf.reshape(tf.add(tf.matMul(hidden, this.valueWeight), this.valueBias!), [n]) as tf.Tensor1D) : undefined;
    const next = new Int32Array(n);
    for (let r = 0; r < b; r++) for (let p = 0; p < t - 1; p++) next[r * t + p] = ids[r * t + p + 1];
    // Position p predicts token p + 1: it is scored when that token is (batch.scored).
    const scored = batch.scored && Uint8Array.from({ length: n }, (_, i) => (i % t < t - 1 ? batch.scored![i + 1] : 0));
    const lora = this.headFactors(n);
    if (fusedHead() && !lora) {
      // The fused head computes nothing for a row whose target is -1.
      const w = this.head;
      const targets = scored ? next.map((id, i) => (scored[i] ? id : -1)) : next;
      const s = tokenScores(hidden, w.native ?? (w.variable as tf.Tensor2D), tf.tensor1d(targets, 'int32'), { entropy: true });
      return { logProbs: s.logProbs, entropy: s.entropy, ...(values ? { values } : {}) };
    }
    let s: { logProbs: tf.Tensor1D; entropy: tf.Tensor1D };
    if (lora) {
      // An unembedding LoRA: the fused head cannot add its low-rank term, so blocks of logits are formed and dropped.
      const w = this.head;
      s = loraHeadScores(hidden, w.native ?? (w.variable as tf.Tensor2D), lora, next, true);
    } else {
      const v = this.config.vocab_size;
      const flat = next.map((id, i) => i * v + id);
      const logp = tf.logSoftmax(logits ?? this.headLogits(hidden));
      s = { logProbs: tf.gather(tf.reshape(logp, [n * v]), tf.tensor1d(flat, 'int32')) as tf.Tensor1D, entropy: tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)) as tf.Tensor1D };
    }
    if (scored) {
      // These paths form every row's logits anyway; unscored rows still report 0, as the fused head's do.
      const keep = tf.tensor1d(Float32Array.from(scored));
      s = { logProbs: tf.mul(s.logProbs, keep) as tf.Tensor1D, entropy: tf.mul(s.entropy, keep) as tf.Tensor1D };
    }
    return { ...s, ...(values ? { values } : {}) };
  }

  /**
   * Per-token log-probs and entropies of a batch under the model (temperature 1), aligned with the
   * tokens — what the trainer recomputes for tokens that sampling produced.
   *
   * @example
   * ```ts
   * const { logProbs } = model.scoreTokens(padBatch([[1, 5, 7]]));
   * logProbs[2]; // log p(7 | 1 5)
   * const reference = model.scoreTokens(batch, { adapter: false }); // base model under a LoRA
   * ```
   */
  scoreTokens(batch: TokenBatch, options: ScoreOptions = {}): TokenScores {
    validateTokenBatch(batch, this.config.vocab_size);
    const ref = options.adapter === false ? null : options.adapter === true ? undefined : options.adapter;
    if (Array.isArray(ref) && ref.length !== batch.batchSize) {
      throw new EngineError('ENGINE_INVALID_INPUT', `${ref.length} per-row adapters for a batch of ${batch.batchSize} rows`, 'adapter');
    }
    // More rows than the heap's free bytes take at once are scored a slice of rows at a time.
    const rows = maxScoringRows(this.config, batch.seqLen);
    if (rows < batch.batchSize) {
      if (ref === undefined && this.selection?.kind === 'rows') throw new EngineError('ENGINE_INVALID_OPTIONS', 'pass per-row adapters through the adapter option', 'adapter');
      const parts: TokenScores[] = [];
      for (let start = 0; start < batch.batchSize; start += rows) {
        const end = Math.min(batch.batchSize, start + rows);
        parts.push(this.scoreTokens(sliceRows(batch, start, end), ref === undefined ? {} : { adapter: sliceAdapterRefs(ref, start, end) }));
      }
      const join = (pick: (s: TokenScores) => Float32Array | Uint8Array | undefined) => {
        const first = pick(parts[0]);
        if (!first) return undefined;
        const out = new (first.constructor as Float32ArrayConstructor)(batch.batchSize * batch.seqLen);
        let at = 0;
        for (const p of parts) {
          const a = pick(p)!;
          out.set(a, at);
          at += a.length;
        }
        return out;
      };
      const values = join((s) => s.values) as Float32Array | undefined;
      return {
        logProbs: join((s) => s.logProbs) as Float32Array,
        entropy: join((s) => s.entropy) as Float32Array,
        valid: join((s) => s.valid) as unknown as Uint8Array,
        ...(values ? { values } : {}),
      };
    }
    const run = () => {
      let valNext: Float32Array | undefined;
      const [lpNext, entNext] = tf.tidy(() => {
        const r = this.nextTokenScores(batch);
        valNext = r.values?.dataSync() as Float32Array | undefined;
        return [r.logProbs.dataSync() as Float32Array, r.entropy.dataSync() as Float32Array];
      });
      return alignToTokens(batch, lpNext, entNext, valNext);
    };
    return ref === undefined ? run() : this.withAdapter(ref, run);
  }
}

/** Rows `[start, end)` of per-row adapters (a single reference applies to every row and is kept). @internal */
export function sliceAdapterRefs<T extends AdapterRef | readonly AdapterRef[]>(ref: T, start: number, end: number): T {
  return (Array.isArray(ref) ? (ref as readonly AdapterRef[]).slice(start, end) : ref) as T;
}

/** Where a model's matrices go: natively for a frozen model when the addon runs on this backend. */
function resolvePlacement(trainable: boolean, wanted?: 'native' | 'heap'): 'native' | 'heap' {
  if (trainable || wanted === 'heap') return 'heap';
  const available = engineAddon() !== undefined && backendRunsNativeKernels();
  if (wanted === 'native' && !available) {
    throw new EngineError(
      'ENGINE_BACKEND_UNAVAILABLE',
      `native placement needs the engine's native addon on the wasm or cpu backend (backend ${tf.getBackend()}, addon ${engineAddon() ? 'loaded' : 'not loaded'})`,
      'placement',
    );
  }
  return available ? 'native' : 'heap';
}

/** Whether next-token scores run through the fused native head. */
function fusedHead(): boolean {
  return engineAddon() !== undefined && backendRunsNativeKernels();
}

/** Moves position-aligned next-token values onto the tokens they score. @internal */
export function alignToTokens(batch: TokenBatch, lpNext: Float32Array, entNext: Float32Array, valNext?: Float32Array): TokenScores {
  const n = batch.batchSize * batch.seqLen;
  const logProbs = new Float32Array(n);
  const entropy = new Float32Array(n);
  const values = valNext ? new Float32Array(n) : undefined;
  const valid = new Uint8Array(n);
  for (let r = 0; r < batch.batchSize; r++) {
    for (let p = 1; p < batch.seqLen; p++) {
      if (!hasLogProb(batch, r, p)) continue;
      const i = r * batch.seqLen + p;
      logProbs[i] = lpNext[i - 1];
      entropy[i] = entNext[i - 1];
      if (values) values[i] = valNext![i - 1];
      valid[i] = 1;
    }
  }
  return { logProbs, entropy, valid, ...(values ? { values } : {}) };
}
