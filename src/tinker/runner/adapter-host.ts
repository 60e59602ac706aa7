import {
  isTargetModule,
  promptLogprobs,
  sample,
  Trainer,
  type AdamWState,
  type CoefficientSource,
  type LoraAdapter,
  type Model,
  type ModelConfig,
  type PromptLogprobs,
  type SampledSequence,
  type SamplingOptions,
  type TokenBatch,
  weightSpecs,
} from '@opentinker/engine';
import { userError } from '../../jobs/kinds/tinker/tinker-ops';

/**
 * The engine as the Tinker runner uses it: one frozen base model and, on it, named LoRA adapters (one
 * per training client) with their own Adam state and accumulated gradients, and immutable snapshots of
 * adapters to sample with. Everything the runner asks of the engine goes through here, so the engine's
 * way of holding several adapters is this file's business alone.
 *
 * This implementation gives each adapter its own copy of the base (the engine it runs on holds one
 * adapter per model): right for the small models tests use, and replaced by the engine's named
 * adapters on one base when those are there.
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

/** An immutable copy of an adapter's weights (or of a checkpoint's) to sample with. */
export interface Snapshot {
  /** Memory its factors take. */
  readonly bytes: number;
  release(): void;
}

/** The LoRA alpha of adapters made through Tinker's API, which sends none: 32, so the scale is `32 / rank`. */
export const TINKER_LORA_ALPHA = 32;

/** PEFT target modules for Tinker's flags (the unembedding's adapter needs the engine's lm_head LoRA). */
export function loraTargets(spec: Pick<AdapterSpec, 'trainAttn' | 'trainMlp'>): string[] {
  return [...(spec.trainAttn ? ['q_proj', 'k_proj', 'v_proj', 'o_proj'] : []), ...(spec.trainMlp ? ['gate_proj', 'up_proj', 'down_proj'] : [])];
}

interface Held {
  model: Model;
  trainer: Trainer;
  /** The learning rate of the step being taken (the trainer reads it through its schedule). */
  lr: { value: number };
  spec: AdapterSpec;
  /** Memory of its factors, their gradients and Adam's moments. */
  bytes: number;
}

class ModelSnapshot implements Snapshot {
  constructor(
    readonly model: Model,
    readonly bytes: number,
  ) {}

  release(): void {
    this.model.dispose();
  }
}

function factorBytes(adapter: LoraAdapter): number {
  let n = 0;
  for (const f of adapter.weights.values()) n += (f.A.data.length + f.B.data.length) * 4;
  return n;
}

export class AdapterHost {
  private readonly held = new Map<string, Held>();

  constructor(private readonly base: Model) {}

  get config(): ModelConfig {
    return this.base.config;
  }

  has(key: string): boolean {
    return this.held.has(key);
  }

  /** Adapters held. */
  get size(): number {
    return this.held.size;
  }

  /** Memory an adapter of this spec takes while it trains: factors, gradients and Adam's two moments (float32). */
  trainingBytes(spec: AdapterSpec): number {
    const targets = loraTargets(spec);
    let parameters = 0;
    for (const w of weightSpecs(this.config)) {
      if (w.kind !== 'linear' || !w.name.startsWith('model.layers.')) continue;
      if (isTargetModule(w.name.slice(0, -'.weight'.length), targets)) parameters += spec.rank * (w.shape[0] + w.shape[1]);
    }
    return 16 * parameters;
  }

  /** Memory held by the adapters (factors, gradients, Adam's moments). */
  get adapterBytes(): number {
    let n = 0;
    for (const h of this.held.values()) n += h.bytes;
    return n;
  }

  /** A fresh adapter (B = 0, so it starts as the base). */
  create(key: string, spec: AdapterSpec): void {
    const targets = loraTargets(spec);
    if (targets.length === 0) throw userError('this server trains LoRA on attention and MLP layers: set train_attn or train_mlp (train_unembed alone is not supported yet)');
    const model = this.base.clone({ trainable: false });
    model.addLora({ r: spec.rank, alpha: TINKER_LORA_ALPHA, targetModules: targets, seed: spec.seed });
    this.hold(key, model, spec, null);
  }

  /** An adapter from a checkpoint, with its Adam state when given. */
  load(key: string, adapter: LoraAdapter, spec: AdapterSpec, optimizer: AdamWState | null): void {
    const model = this.base.clone({ trainable: false });
    model.loadLora(adapter);
    this.hold(key, model, spec, optimizer);
  }

  private hold(key: string, model: Model, spec: AdapterSpec, optimizer: AdamWState | null): void {
    this.drop(key);
    const lr = { value: 0 };
    const trainer = new Trainer(model, { lr: () => lr.value, betas: [0.9, 0.95], eps: 1e-12, weightDecay: 0 });
    if (optimizer) trainer.loadOptimizerState(optimizer);
    this.held.set(key, { model, trainer, lr, spec, bytes: 4 * factorBytes(model.exportLora()) });
  }

  /** Replaces an adapter's weights (and Adam state, when given) with a checkpoint's. */
  replace(key: string, adapter: LoraAdapter, optimizer: AdamWState | null): void {
    const h = this.get(key);
    const previous = h.trainer.optimizerState();
    this.load(key, adapter, h.spec, optimizer ?? previous);
  }

  drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    h.trainer.dispose();
    h.model.dispose();
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
    return this.get(key).model.scoreTokens(batch).logProbs;
  }

  /** One AdamW step with this call's hyper-parameters; null when no gradients were accumulated. */
  step(key: string, params: StepParams): StepOutcome | null {
    const h = this.get(key);
    if (h.trainer.pending === 0) return null;
    h.lr.value = params.lr;
    const r = h.trainer.step();
    return { gradNorm: r.gradNorm, lr: r.lr, skipped: r.skipped };
  }

  exportAdapter(key: string, baseName: string): LoraAdapter {
    return this.get(key).model.exportLora(baseName);
  }

  optimizerState(key: string): AdamWState {
    return this.get(key).trainer.optimizerState();
  }

  /** The adapter's weights as they are now, for sampling while it trains on. */
  snapshot(key: string): Snapshot {
    return this.snapshotOf(this.get(key).model.exportLora());
  }

  /** A checkpoint's adapter, to sample with. */
  snapshotOf(adapter: LoraAdapter): Snapshot {
    const model = this.base.clone({ trainable: false });
    model.loadLora(adapter);
    return new ModelSnapshot(model, factorBytes(adapter));
  }

  /** Samples with a snapshot, or with the base alone (null). */
  sample(with_: Snapshot | null, prompts: ReadonlyArray<ArrayLike<number>>, options: SamplingOptions): SampledSequence[] {
    return sample(this.modelOf(with_), prompts, options);
  }

  promptLogprobs(with_: Snapshot | null, ids: readonly number[], top: number, vocabLimit?: number): PromptLogprobs {
    return promptLogprobs(this.modelOf(with_), ids, top, vocabLimit);
  }

  dispose(): void {
    for (const key of [...this.held.keys()]) this.drop(key);
  }

  private modelOf(with_: Snapshot | null): Model {
    if (with_ === null) return this.base;
    if (!(with_ instanceof ModelSnapshot)) throw new Error('a snapshot of another host');
    return with_.model;
  }

  private get(key: string): Held {
    const h = this.held.get(key);
    if (!h) throw userError(`${key} is not loaded in this runner`);
    return h;
  }
}
