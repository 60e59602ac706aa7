import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { attentionInputs, groupedQueryAttention } from './attention';
import type { KvCache, KvLayer } from './kv-cache';
import { headDim, validateModelConfig, type ModelConfig } from './model-config';
import { rmsNorm } from './rms-norm';
import { applyRope, halfSwapMatrix, ropeTables } from './rope';
import { swiglu } from './swiglu';
import { hasLogProb, validateTokenBatch, type TokenBatch } from './token-batch';
import { initWeights, validateWeights, weightSpecs, type NamedWeights } from './weights';
import { Prng } from '../util/prng';
import { loraScaling, peftKey, validateLoraWeights, type LoraAdapter, type LoraFactors } from '../io/peft-adapter';
import { LORA_TARGETS, initLoraA, loraModules, validateLoraOptions, type LoraOptions } from './lora';

/** How a Hugging Face weight maps onto the model's variable: linear weights are stored transposed. */
interface Slot {
  variable: tf.Variable;
  /** Stored `[in, out]` while Hugging Face keeps `[out, in]`. */
  transposed: boolean;
}

interface LayerVars {
  inputNorm: tf.Variable;
  q: tf.Variable;
  k: tf.Variable;
  v: tf.Variable;
  qBias?: tf.Variable;
  kBias?: tf.Variable;
  vBias?: tf.Variable;
  o: tf.Variable;
  postNorm: tf.Variable;
  gate: tf.Variable;
  up: tf.Variable;
  down: tf.Variable;
}

/** An attached LoRA adapter: factors held transposed (`A` `[in, r]`, `B` `[r, out]`) so `x·A·B` is two plain matmuls. */
interface LoraState {
  config: LoraAdapter['config'];
  scaling: number;
  factors: Map<string, { A: tf.Variable; B: tf.Variable }>;
  rawConfig?: Record<string, unknown>;
}

/** Options of {@link Model.scoreTokens}. */
export interface ScoreOptions {
  /** With `false`, score under the base model alone (the reference policy of a LoRA model); default true. */
  adapter?: boolean;
}

/** Options of {@link Model.fromWeights}. */
export interface ModelOptions {
  /** Whether the weights are trainable variables (default true); a frozen reference policy uses false. */
  trainable?: boolean;
}

/** Result of one model run over new tokens. @internal */
export interface RunResult {
  /** `[rows, vocab]`: every position, or one per row with `lastOnly`. */
  logits: tf.Tensor2D;
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
 * Weights move in and out by their Hugging Face names ({@link NamedWeights}); linear weights are held
 * transposed (`[in, out]`) so the forward pass runs plain 2-D matmuls, the fast path on wasm.
 * The model owns tf variables: call {@link Model.dispose} when done.
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
  private readonly slots = new Map<string, Slot>();
  private readonly embed: tf.Variable;
  private readonly layers: LayerVars[] = [];
  private readonly finalNorm: tf.Variable;
  private readonly lmHead?: tf.Variable;
  private valueWeight?: tf.Variable;
  private valueBias?: tf.Variable;
  private readonly id: number;
  private disposed = false;
  private lora?: LoraState;
  private adapterOff = false;

  private constructor(config: ModelConfig, weights: NamedWeights, trainable: boolean) {
    this.config = config;
    this.trainable = trainable;
    this.id = nextModelId++;
    const make = (name: string): tf.Variable => {
      const spec = weights.get(name)!;
      return this.makeVariable(name, spec.data, spec.shape, spec.shape.length === 2 && name !== 'model.embed_tokens.weight');
    };
    this.embed = make('model.embed_tokens.weight');
    for (let i = 0; i < config.num_hidden_layers; i++) {
      const p = `model.layers.${i}.`;
      const layer: LayerVars = {
        inputNorm: make(`${p}input_layernorm.weight`),
        q: make(`${p}self_attn.q_proj.weight`),
        k: make(`${p}self_attn.k_proj.weight`),
        v: make(`${p}self_attn.v_proj.weight`),
        o: make(`${p}self_attn.o_proj.weight`),
        postNorm: make(`${p}post_attention_layernorm.weight`),
        gate: make(`${p}mlp.gate_proj.weight`),
        up: make(`${p}mlp.up_proj.weight`),
        down: make(`${p}mlp.down_proj.weight`),
      };
      if (config.attention_bias) {
        layer.qBias = make(`${p}self_attn.q_proj.bias`);
        layer.kBias = make(`${p}self_attn.k_proj.bias`);
        layer.vBias = make(`${p}self_attn.v_proj.bias`);
      }
      this.layers.push(layer);
    }
    this.finalNorm = make('model.norm.weight');
    if (!config.tie_word_embeddings) this.lmHead = make('lm_head.weight');
    if (weights.has(VALUE_WEIGHT)) {
      const w = weights.get(VALUE_WEIGHT)!;
      if (w.shape.length !== 2 || w.shape[0] !== 1 || w.shape[1] !== config.hidden_size) {
        throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${VALUE_WEIGHT} has shape [${w.shape}], expected [1,${config.hidden_size}]`, VALUE_WEIGHT);
      }
      const bias = weights.get(VALUE_BIAS) ?? { shape: [1], data: new Float32Array(1) };
      if (bias.shape.length !== 1 || bias.shape[0] !== 1) {
        throw new EngineError('ENGINE_INVALID_WEIGHTS', `weight ${VALUE_BIAS} has shape [${bias.shape}], expected [1]`, VALUE_BIAS);
      }
      this.valueWeight = make(VALUE_WEIGHT);
      this.valueBias = this.makeVariable(VALUE_BIAS, bias.data, [1], false);
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
   * A model holding copies of `weights` (Hugging Face names and layouts). The config is validated, and
   * so are the weights against it (`ENGINE_INVALID_WEIGHTS` names a missing or misshapen one; extra
   * entries such as a tied checkpoint's `lm_head.weight` are ignored).
   *
   * @example
   * ```ts
   * const model = Model.fromWeights(config, weightsReadFromSafetensors);
   * ```
   */
  static fromWeights(config: ModelConfig, weights: NamedWeights, options: ModelOptions = {}): Model {
    const checked = validateModelConfig(config);
    validateWeights(checked, weights, true);
    return new Model(checked, weights, options.trainable ?? true);
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
    return new Model(checked, initWeights(checked, seed), options.trainable ?? true);
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
    for (const spec of specs) {
      const slot = this.slots.get(spec.name)!;
      const data = tf.tidy(() => (slot.transposed ? tf.transpose(slot.variable) : slot.variable).dataSync() as Float32Array);
      out.set(spec.name, { shape: [...spec.shape], data: Float32Array.from(data) });
    }
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
    return new Model(this.config, this.exportWeights(), options.trainable ?? this.trainable);
  }

  /**
   * The variables by Hugging Face weight name (linear weights stored transposed); the optimizer uses the
   * names to decide weight decay.
   */
  namedVariables(): Map<string, tf.Variable> {
    this.assertLive();
    // Under a LoRA adapter only its factors train: the base stays frozen (a Trainer made after addLora sees just these).
    if (this.lora) {
      const out = new Map<string, tf.Variable>();
      for (const [module, f] of this.lora.factors) out.set(peftKey(module, 'A'), f.A).set(peftKey(module, 'B'), f.B);
      return out;
    }
    return new Map([...this.slots].map(([name, slot]) => [name, slot.variable]));
  }

  /** Whether a LoRA adapter is attached. */
  get hasLora(): boolean {
    return this.lora !== undefined;
  }

  /**
   * Attaches a fresh LoRA adapter: each targeted layer linear computes `W·x + (alpha/r)·B·(A·x)`, with
   * `A` `[r, in]` Kaiming-uniform (as PEFT) and `B` `[out, r]` zeros, so outputs are unchanged until it
   * trains. From then on {@link Model.namedVariables} lists only the factors: a {@link Trainer} made
   * afterwards trains the adapter and leaves the base weights bit-identical.
   *
   * @example
   * ```ts
   * model.addLora({ r: 8, alpha: 16, targetModules: ['q_proj', 'v_proj'], seed: 1 });
   * const trainer = new Trainer(model, { lr: 1e-3 });
   * ```
   */
  addLora(options: LoraOptions): void {
    this.assertLive();
    validateLoraOptions(options);
    const targets = options.targetModules ?? ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
    const modules = loraModules(this.config, targets);
    if (modules.length === 0) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', `LoRA targetModules ${JSON.stringify(targets)} match no layer linear (${LORA_TARGETS.join(', ')})`, 'targetModules');
    }
    const rng = new Prng(options.seed);
    const weights = new Map<string, LoraFactors>();
    for (const m of modules) {
      weights.set(m.module, {
        A: { shape: [options.r, m.in], data: initLoraA(options.r, m.in, rng) },
        B: { shape: [m.out, options.r], data: new Float32Array(m.out * options.r) },
      });
    }
    const config = { r: options.r, lora_alpha: options.alpha, target_modules: targets, base_model_name_or_path: null, lora_dropout: 0, use_rslora: options.useRslora ?? false };
    this.loadLora({ config, weights });
  }

  /**
   * Attaches an adapter read by `loadLoraAdapter` (checked against this model's shapes).
   *
   * @example
   * ```ts
   * model.loadLora(await loadLoraAdapter('out/adapter', { modelConfig: model.config }));
   * ```
   */
  loadLora(adapter: LoraAdapter): void {
    this.assertLive();
    if (this.lora) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the model already has a LoRA adapter (merge it first)', 'lora');
    validateLoraWeights(adapter, this.config);
    const factors = new Map<string, { A: tf.Variable; B: tf.Variable }>();
    for (const [module, f] of adapter.weights) {
      const [A, B] = tf.tidy(() => [
        tf.variable(tf.transpose(tf.tensor2d(f.A.data, f.A.shape as [number, number])), true, `m${this.id}/${peftKey(module, 'A')}`),
        tf.variable(tf.transpose(tf.tensor2d(f.B.data, f.B.shape as [number, number])), true, `m${this.id}/${peftKey(module, 'B')}`),
      ]);
      factors.set(module, { A, B });
    }
    this.lora = { config: { ...adapter.config }, scaling: loraScaling(adapter.config), factors, ...(adapter.rawConfig ? { rawConfig: adapter.rawConfig } : {}) };
  }

  /**
   * The attached adapter in PEFT layout (`A` `[r, in]`, `B` `[out, r]`), ready for `saveLoraAdapter`.
   *
   * @example
   * ```ts
   * await saveLoraAdapter('out/adapter', model.exportLora('Qwen/Qwen2.5-0.5B-Instruct'), { modelConfig: model.config });
   * ```
   */
  exportLora(baseModelNameOrPath?: string): LoraAdapter {
    this.assertLive();
    const lora = this.requireLora();
    const weights = new Map<string, LoraFactors>();
    const read = (v: tf.Variable) => {
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
   * Folds the adapter into the base, `W' = W + scaling·B·A`, and removes it: the model then runs
   * without the extra matmuls and {@link Model.exportWeights} holds the merged weights (a plain Hugging
   * Face checkpoint). {@link Model.namedVariables} lists the base weights again.
   *
   * @example
   * ```ts
   * model.mergeLora();
   * await saveHfModelDir('out/merged', { config: model.config, weights: model.exportWeights() });
   * ```
   */
  mergeLora(): void {
    this.assertLive();
    const lora = this.requireLora();
    for (const [module, f] of lora.factors) {
      const w = this.slots.get(`${module}.weight`)!.variable;
      tf.tidy(() => w.assign(tf.add(w, tf.mul(tf.matMul(f.A, f.B), lora.scaling))));
    }
    this.dropLora();
  }

  /** Detaches and frees the adapter without merging it. */
  removeLora(): void {
    this.assertLive();
    this.requireLora();
    this.dropLora();
  }

  /**
   * Runs `fn` with the adapter switched off: the base model alone, i.e. the reference policy for KL
   * under a LoRA without a second copy of the weights. Not for use across an `await`.
   *
   * @example
   * ```ts
   * const ref = model.withoutAdapter(() => model.scoreTokens(batch));
   * ```
   */
  withoutAdapter<T>(fn: () => T): T {
    const before = this.adapterOff;
    this.adapterOff = true;
    try {
      return fn();
    } finally {
      this.adapterOff = before;
    }
  }

  private requireLora(): LoraState {
    if (!this.lora) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the model has no LoRA adapter', 'lora');
    return this.lora;
  }

  private dropLora(): void {
    for (const f of this.lora!.factors.values()) tf.dispose([f.A, f.B]);
    this.lora = undefined;
  }

  /** `x·W` (`W` stored `[in, out]`) plus the adapter's `scaling·(x·A)·B` when one targets `module`. */
  private linear(x: tf.Tensor2D, w: tf.Tensor, module: string): tf.Tensor2D {
    const y = tf.matMul(x, w) as tf.Tensor2D;
    const f = this.lora && !this.adapterOff ? this.lora.factors.get(module) : undefined;
    if (!f) return y;
    return tf.add(y, tf.mul(tf.matMul(tf.matMul(x, f.A), f.B), this.lora!.scaling)) as tf.Tensor2D;
  }

  /** Frees the model's variables. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const slot of this.slots.values()) slot.variable.dispose();
    this.slots.clear();
    if (this.lora) this.dropLora();
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  private assertLive(): void {
    if (this.disposed) throw new EngineError('ENGINE_DISPOSED', 'the model was disposed');
  }

  /**
   * Runs new tokens `ids` (`[B, T]`, int32) through the model, after the cached ones in `past` when
   * given. `keyMask` is `[B, past + T]` (1 = real token). Must be called inside `tf.tidy` (the caller owns
   * every tensor it returns). With `lastOnly`, logits and hidden states are for each row's last
   * position only. @internal
   */
  run(ids: tf.Tensor2D, keyMask: Uint8Array, past: KvCache | undefined, opts: { lastOnly?: boolean; present?: boolean } = {}): RunResult {
    this.assertLive();
    const c = this.config;
    const [b, t] = ids.shape;
    const pastLen = past ? past.length : 0;
    const s = pastLen + t;
    const hd = headDim(c);
    const h = c.num_attention_heads;
    const kvh = c.num_key_value_heads;
    const n = b * t;
    const { positions, bias } = attentionInputs(keyMask, b, pastLen, t);
    const { cos, sinSigned } = ropeTables(positions, hd, c.rope_theta);
    const cosT = tf.tensor4d(cos, [b, t, 1, hd]);
    const sinT = tf.tensor4d(sinSigned, [b, t, 1, hd]);
    const biasT = tf.tensor(bias, [b, 1, 1, t, s]);
    const swap = tf.tensor2d(halfSwapMatrix(hd), [hd, hd]);
    const scale = 1 / Math.sqrt(hd);

    let x = tf.gather(this.embed, tf.reshape(ids, [n])) as tf.Tensor2D;
    const present: KvLayer[] = [];
    this.layers.forEach((L, i) => {
      const p = `model.layers.${i}.`;
      const a = rmsNorm(x, L.inputNorm, c.rms_norm_eps) as tf.Tensor2D;
      let q: tf.Tensor = this.linear(a, L.q, `${p}self_attn.q_proj`);
      let k: tf.Tensor = this.linear(a, L.k, `${p}self_attn.k_proj`);
      let v: tf.Tensor = this.linear(a, L.v, `${p}self_attn.v_proj`);
      if (L.qBias) q = tf.add(q, L.qBias);
      if (L.kBias) k = tf.add(k, L.kBias);
      if (L.vBias) v = tf.add(v, L.vBias);
      q = tf.mul(applyRope(tf.reshape(q, [b, t, h, hd]), cosT, sinT, swap), scale);
      k = tf.transpose(applyRope(tf.reshape(k, [b, t, kvh, hd]), cosT, sinT, swap), [0, 2, 1, 3]);
      v = tf.transpose(tf.reshape(v, [b, t, kvh, hd]), [0, 2, 1, 3]);
      if (past) {
        const cached = past.layers[i];
        k = tf.concat([cached.k, k], 2);
        v = tf.concat([cached.v, v], 2);
      }
      if (opts.present) present.push({ k, v });
      const attn = groupedQueryAttention(q, k, v, biasT);
      x = tf.add(x, this.linear(attn, L.o, `${p}self_attn.o_proj`));
      const m = rmsNorm(x, L.postNorm, c.rms_norm_eps) as tf.Tensor2D;
      x = tf.add(
        x,
        swiglu(
          m,
          (h) => this.linear(h, L.gate, `${p}mlp.gate_proj`),
          (h) => this.linear(h, L.up, `${p}mlp.up_proj`),
          (h) => this.linear(h, L.down, `${p}mlp.down_proj`),
        ),
      );
    });
    if (opts.lastOnly && t > 1) {
      const last = new Int32Array(b).map((_, row) => row * t + t - 1);
      x = tf.gather(x, tf.tensor1d(last, 'int32'));
    }
    const hidden = rmsNorm(x, this.finalNorm, c.rms_norm_eps) as tf.Tensor2D;
    const logits = (this.lmHead ? tf.matMul(hidden, this.lmHead) : tf.matMul(hidden, this.embed, false, true)) as tf.Tensor2D;
    return { logits, hidden, ...(opts.present ? { present } : {}) };
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
    return tf.tidy(() => this.run(tf.tensor2d(batch.ids, [batch.batchSize, batch.seqLen], 'int32'), batch.mask, undefined).logits);
  }

  /**
   * Next-token log-probs `[B·T]` and entropies `[B·T]` as tensors, position-aligned (entry `t` is about
   * predicting token `t+1`; the last position of a row predicts nothing and gets target 0). Differentiable:
   * the trainer builds its loss on these. Must be called inside `tf.tidy`. @internal
   */
  nextTokenScores(batch: TokenBatch): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D; values?: tf.Tensor1D; hidden: tf.Tensor2D } {
    const { batchSize: b, seqLen: t, ids } = batch;
    const v = this.config.vocab_size;
    const { logits, hidden } = this.run(tf.tensor2d(ids, [b, t], 'int32'), batch.mask, undefined);
    const n = b * t;
    const flat = new Int32Array(n);
    for (let r = 0; r < b; r++) {
      for (let p = 0; p < t - 1; p++) flat[r * t + p] = (r * t + p) * v + ids[r * t + p + 1];
      flat[r * t + t - 1] = (r * t + t - 1) * v;
    }
    const logp = tf.logSoftmax(logits);
    const logProbs = tf.gather(tf.reshape(logp, [n * v]), tf.tensor1d(flat, 'int32')) as tf.Tensor1D;
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)) as tf.Tensor1D;
    const values = this.valueWeight ? (tf.reshape(tf.add(tf.matMul(hidden, this.valueWeight), this.valueBias!), [n]) as tf.Tensor1D) : undefined;
    return { logProbs, entropy, hidden, ...(values ? { values } : {}) };
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
    if (options.adapter === false) return this.withoutAdapter(() => this.scoreTokens(batch));
    validateTokenBatch(batch, this.config.vocab_size);
    let valNext: Float32Array | undefined;
    const [lpNext, entNext] = tf.tidy(() => {
      const r = this.nextTokenScores(batch);
      valNext = r.values?.dataSync() as Float32Array | undefined;
      return [r.logProbs.dataSync() as Float32Array, r.entropy.dataSync() as Float32Array];
    });
    return alignToTokens(batch, lpNext, entNext, valNext);
  }
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
