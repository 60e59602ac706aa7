import {
  loraStateBytes,
  promptLogprobs,
  sample,
  TINKER_LORA_ALPHA,
  tinkerLoraTargets,
  Trainer,
  type AdamWState,
  type AdapterSnapshot,
  type CoefficientSource,
  type LoraAdapter,
  type Model,
  type ModelConfig,
  type PromptLogprobs,
  type SampledSequence,
  type SamplingOptions,
  type TokenBatch,
} from '@opentinker/engine';

/**
 * The engine as the Tinker runner uses it: one frozen base model and, on it, a named LoRA adapter per
 * training client with its own trainer (Adam state, accumulated gradients), and immutable snapshots of
 * adapters to sample with. Everything the runner asks of the engine goes through here.
 */

/** Tinker's LoRA config: rank, the factors' seed, which parts train. */
export interface AdapterSpec {
  rank: number;
  seed: number;
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
}

/** AdamW's hyper-parameters for one step (`AdamParams`); `gradClipNorm` 0 = no clipping. */
export interface StepParams {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  gradClipNorm: number;
}

/** What one optimizer step did. */
export interface StepOutcome {
  gradNorm: number;
  lr: number;
  skipped: boolean;
}

interface Held {
  trainer: Trainer;
  spec: AdapterSpec;
  /** Memory of its factors, their gradients and Adam's moments. */
  bytes: number;
}

function targetsOf(spec: AdapterSpec): string[] {
  return tinkerLoraTargets({ trainAttn: spec.trainAttn, trainMlp: spec.trainMlp, trainUnembed: spec.trainUnembed });
}

export class AdapterHost {
  private readonly held = new Map<string, Held>();
  /** Adapters loaded frozen only to be snapshotted (a checkpoint to sample with); named apart from the clients'. */
  private loads = 0;

  constructor(private readonly model: Model) {}

  get config(): ModelConfig {
    return this.model.config;
  }

  has(key: string): boolean {
    return this.held.has(key);
  }

  /** Adapters held. */
  get size(): number {
    return this.held.size;
  }

  /** Memory held by the adapters (factors, gradients, Adam's moments). */
  get adapterBytes(): number {
    let n = 0;
    for (const h of this.held.values()) n += h.bytes;
    return n;
  }

  /** Memory an adapter of this spec takes while it trains: factors, gradients and Adam's two moments (float32). */
  trainingBytes(spec: AdapterSpec): number {
    return loraStateBytes(this.config, spec.rank, targetsOf(spec)).trainingBytes;
  }

  /** A fresh adapter (B = 0, so it starts as the base). */
  create(key: string, spec: AdapterSpec): void {
    this.drop(key);
    this.model.addLora({ r: spec.rank, alpha: TINKER_LORA_ALPHA, targetModules: targetsOf(spec), seed: spec.seed }, key);
    this.hold(key, spec, null);
  }

  /** An adapter from a checkpoint, with its Adam state when given. */
  load(key: string, adapter: LoraAdapter, spec: AdapterSpec, optimizer: AdamWState | null): void {
    this.drop(key);
    this.model.loadLora(adapter, key);
    this.hold(key, spec, optimizer);
  }

  private hold(key: string, spec: AdapterSpec, optimizer: AdamWState | null): void {
    const trainer = new Trainer(this.model, { adapter: key, lr: 0, betas: [0.9, 0.95], eps: 1e-12, weightDecay: 0 });
    try {
      if (optimizer) trainer.loadOptimizerState(optimizer);
    } catch (error) {
      trainer.dispose();
      this.model.removeLora(key);
      throw error;
    }
    this.held.set(key, { trainer, spec, bytes: 4 * this.model.adapterInfo(key).bytes });
  }

  /** Replaces an adapter's weights (and Adam state, when given; else it keeps its own) with a checkpoint's. */
  replace(key: string, adapter: LoraAdapter, optimizer: AdamWState | null): void {
    const h = this.get(key);
    this.load(key, adapter, h.spec, optimizer ?? h.trainer.optimizerState());
  }

  drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    h.trainer.dispose();
    this.model.removeLora(key);
    this.held.delete(key);
  }

  spec(key: string): AdapterSpec {
    return this.get(key).spec;
  }

  /** Optimizer steps the adapter has taken. */
  steps(key: string): number {
    return this.get(key).trainer.steps;
  }

  /** Rows of `seqLen` tokens one training pass of this adapter takes (see `Trainer.microBatchRows`). */
  microBatchRows(key: string, seqLen: number, rows: number): number {
    return this.get(key).trainer.microBatchRows(seqLen, rows);
  }

  /** Forward and backward: gradients add up until {@link step}. Returns the token-aligned log-probs before the update. */
  accumulate(key: string, batch: TokenBatch, coefficients: CoefficientSource): Float32Array {
    return this.get(key).trainer.accumulate(batch, coefficients).logProbs;
  }

  /** Forward only: the token-aligned log-probs under the adapter. */
  score(key: string, batch: TokenBatch): Float32Array {
    this.get(key);
    return this.model.scoreTokens(batch, { adapter: key }).logProbs;
  }

  /** One AdamW step with this call's hyper-parameters; null when no gradients were accumulated. */
  step(key: string, p: StepParams): StepOutcome | null {
    const h = this.get(key);
    if (h.trainer.pending === 0) return null;
    const r = h.trainer.step({ lr: p.lr, betas: [p.beta1, p.beta2], eps: p.eps, weightDecay: p.weightDecay, maxGradNorm: p.gradClipNorm });
    return { gradNorm: r.gradNorm, lr: r.lr, skipped: r.skipped };
  }

  exportAdapter(key: string, baseName: string): LoraAdapter {
    this.get(key);
    return this.model.exportLora(baseName, key);
  }

  optimizerState(key: string): AdamWState {
    return this.get(key).trainer.optimizerState();
  }

  /** The adapter's weights as they are now, for sampling while it trains on; free it with `dispose()`. */
  snapshot(key: string): AdapterSnapshot {
    this.get(key);
    return this.model.snapshotAdapter(key);
  }

  /** A checkpoint's adapter, to sample with. */
  snapshotOf(adapter: LoraAdapter): AdapterSnapshot {
    const name = `checkpoint-${this.loads++}`;
    this.model.loadLora(adapter, name, { trainable: false });
    try {
      return this.model.snapshotAdapter(name);
    } finally {
      this.model.removeLora(name);
    }
  }

  /**
   * Samples with a snapshot or the base alone (null), or one of those per prompt: prompts of several
   * samplers share each pass over the base weights.
   */
  sample(with_: AdapterSnapshot | null | ReadonlyArray<AdapterSnapshot | null>, prompts: ReadonlyArray<ArrayLike<number>>, options: SamplingOptions): SampledSequence[] {
    return sample(this.model, prompts, { ...options, adapter: with_ });
  }

  promptLogprobs(with_: AdapterSnapshot | null, ids: readonly number[], top: number, vocabLimit?: number): PromptLogprobs {
    return this.model.withAdapter(with_, () => promptLogprobs(this.model, ids, top, vocabLimit));
  }

  dispose(): void {
    for (const key of [...this.held.keys()]) this.drop(key);
  }

  private get(key: string): Held {
    const h = this.held.get(key);
    if (!h) throw new Error(`${key} is not loaded in this runner`);
    return h;
  }
}
