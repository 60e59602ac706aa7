import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { padBatch, sliceRows, validateTokenBatch, type TokenBatch } from '../model/token-batch';
import type { Model } from '../model/transformer';
import { AdamW, type AdamWOptions, type AdamWState, type AdamWStepOptions } from './adamw';
import { clipFactor, globalNorm } from './grad-clip';
import { alignToTokens } from '../model/transformer';
import { surrogateLoss, type CurrentScores, type LossCoefficients } from './logprobs';
import { recomputedGradients } from './layer-recompute';
import { disposePrefix, prefixBackward, prefixForward, type PrefixState } from './shared-prefix';
import { freeHeapBytes, maxTrainingRows, planTrainingPass, preferredTrainingRows, type PassExtras } from '../model/memory-plan';
import { nativeLayerOps } from '../kernels/native-layer-ops';
import type { LrSchedule } from './lr-schedule';

/** Options of {@link Trainer}. */
export interface TrainerOptions extends AdamWOptions {
  /** A constant learning rate or a schedule of the step index. */
  lr: number | LrSchedule;
  /** Clip the accumulated gradients to this global L2 norm (off when absent); the norm is reported either way. */
  maxGradNorm?: number;
  /**
   * Recompute each decoder layer's activations in the backward pass instead of keeping the whole tape:
   * `auto` (default) when the tape would not fit the heap's free bytes, or always / never.
   */
  recompute?: 'auto' | boolean;
  /**
   * The LoRA adapter this trainer trains, by name (`Model.addLora(options, name)`): its passes run under
   * that adapter and only its factors move, so trainers of several adapters share one base model.
   * Default: the model's default adapter, or the whole model without one.
   */
  adapter?: string;
}

/**
 * Hyper-parameters for one {@link Trainer.step} in place of the trainer's (Tinker's `optim_step` sends
 * `AdamParams` with every call). `maxGradNorm` 0 turns clipping off for the step.
 */
export interface StepOptions extends AdamWStepOptions {
  lr?: number;
  maxGradNorm?: number;
}

/** Coefficients for a batch, or a function computing them from the batch's current log-probs and entropies. */
export type CoefficientSource = LossCoefficients | ((scores: CurrentScores) => LossCoefficients);

/** What one micro-batch's forward/backward pass saw. */
export interface MicroBatchResult {
  /** Value of the surrogate `Σ c·logProb + Σ e·entropy` (equal to the loss itself for cross-entropy coefficients). */
  loss: number;
  /** Token-aligned log-probs under the parameters before this step (0 where undefined). */
  logProbs: Float32Array;
  /** Token-aligned entropies, likewise. */
  entropy: Float32Array;
  /** Token-aligned values, for a model with a value head. */
  values?: Float32Array;
  /** Tokens that have a log-prob. */
  tokens: number;
  /** Whether the pass recomputed layer activations (see {@link TrainerOptions.recompute}). */
  recomputed: boolean;
}

/**
 * Training passes over rows that continue one shared prefix (see {@link Trainer.sharedPrefix}). Their
 * gradients join the trainer's accumulation like {@link Trainer.accumulate}'s; {@link finish} adds the
 * prefix's own share and must run before {@link Trainer.step}.
 */
export interface SharedPrefixPasses {
  /** Tokens of the prefix. */
  readonly length: number;
  /**
   * One forward/backward pass of rows that continue the prefix: `batch` holds each row's tokens after
   * it (positions start at {@link length}); log-probs, coefficients and the result are aligned with
   * `batch` as in {@link Trainer.accumulate}. A row's first token has no log-prob here.
   */
  accumulate(batch: TokenBatch, coefficients: CoefficientSource): MicroBatchResult;
  /** Rows of `seqLen` tokens per {@link accumulate} that train `rows` rows with the least compute (as {@link Trainer.microBatchRows}). */
  microBatchRows(seqLen: number, rows: number): number;
  /** Back-propagates what the rows' passes sent to the prefix and frees it. */
  finish(): void;
  /** Frees the prefix without adding its gradients (a cancelled update). */
  dispose(): void;
}

/** What an optimizer step did. */
export interface StepResult {
  /** Optimizer steps taken so far, this one included (unchanged when skipped). */
  step: number;
  /** Learning rate used. */
  lr: number;
  /** Global L2 norm of the accumulated gradients before clipping. */
  gradNorm: number;
  /** Whether clipping scaled the gradients down. */
  clipped: boolean;
  /** True when the gradient norm was not finite: no update was made. */
  skipped: boolean;
  /** Micro-batches accumulated into this step. */
  microBatches: number;
}

/**
 * Training steps for a {@link Model}: forward with per-token log-probs and entropy, backward through a
 * surrogate loss built from per-token coefficients, gradient accumulation over micro-batches, clipping by
 * global norm, and AdamW.
 *
 * The loss is given by its derivative per token: `logProbCoef[t] = dL/dlogProb[t]` (what
 * `@opentinker/rl`'s losses return as `dLogProb`), optionally `entropyCoef[t] = dL/dentropy[t]`; the
 * backward pass of `Σ coef·logProb` is then exactly that of L. {@link crossEntropyCoefficients} gives SFT.
 * Coefficients may also be a function of the current log-probs, so PPO-style losses (whose gradient
 * depends on the ratio to the old policy) run with a single forward pass per micro-batch.
 * Gradients of micro-batches add up: scale coefficients so their sum over a step is the loss you want
 * (e.g. divide by the number of micro-batches for a mean).
 *
 * @example
 * ```ts
 * const trainer = new Trainer(model, { lr: 3e-4, maxGradNorm: 1 });
 * const batch = padBatch(sequences);
 * trainer.accumulate(batch, crossEntropyCoefficients(batch, responseMask));
 * const { gradNorm } = trainer.step();
 *
 * // RL: coefficients from @opentinker/rl at the current log-probs
 * trainer.accumulate(batch, ({ logProbs }) => ({ logProbCoef: ppoLoss({ ...inputs, logProb: logProbs }).dLogProb }));
 * trainer.step();
 * ```
 */
export class Trainer {
  private readonly optimizer: AdamW;
  private readonly variables: Map<string, tf.Variable>;
  private readonly names = new Map<string, string>();
  private accumulated = new Map<string, tf.Tensor>();
  private microBatches = 0;
  private readonly lr: LrSchedule;

  constructor(
    readonly model: Model,
    private readonly options: TrainerOptions,
  ) {
    // A frozen base still trains under a LoRA adapter: only the factors are optimised then.
    if (options.adapter !== undefined) {
      if (!model.hasAdapter(options.adapter)) throw new EngineError('ENGINE_INVALID_OPTIONS', `the model has no adapter named "${options.adapter}"`, 'adapter');
      if (!model.adapterInfo(options.adapter).trainable)
        throw new EngineError('ENGINE_INVALID_OPTIONS', `adapter "${options.adapter}" was loaded frozen (trainable: false)`, 'adapter');
    } else if (!model.trainable && !model.hasLora) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', 'the model is frozen (trainable: false)', 'model');
    }
    const lr = options.lr;
    if (typeof lr === 'number' && !(lr >= 0)) throw new EngineError('ENGINE_INVALID_OPTIONS', `lr must be >= 0, got ${lr}`, 'lr');
    if (options.maxGradNorm !== undefined && !(options.maxGradNorm > 0)) {
      throw new EngineError('ENGINE_INVALID_OPTIONS', `maxGradNorm must be > 0, got ${options.maxGradNorm}`, 'maxGradNorm');
    }
    this.lr = typeof lr === 'number' ? () => lr : lr;
    this.variables = model.namedVariables(options.adapter);
    for (const [name, v] of this.variables) this.names.set(v.name, name);
    this.optimizer = new AdamW(this.variables, options);
  }

  /** Bytes of the trainable parameters (their gradients take as much). */
  private get trainableBytes(): number {
    let n = 0;
    for (const v of this.variables.values()) n += v.size * 4;
    return n;
  }

  /** How the memory plan sizes this trainer's passes: LoRA terms that run inside native products save tape. */
  private passExtras(pastLen = 0): PassExtras {
    let fusedLoraFloats = 0;
    if (this.model.placement === 'native' && nativeLayerOps()) {
      // The first layer's B factors ([r, out]) name the linears that carry a term, and their widths.
      for (const [name, v] of this.variables) if (/\.layers\.0\..*\.lora_B\./.test(name)) fusedLoraFloats += v.shape[1] ?? 0;
    }
    return { pastLen, fusedLoraFloats };
  }

  /** Optimizer steps taken. */
  get steps(): number {
    return this.optimizer.steps;
  }

  /** Micro-batches accumulated since the last step. */
  get pending(): number {
    return this.microBatches;
  }

  /**
   * Forward and backward pass of one micro-batch; its gradients are added to those accumulated since
   * the last {@link Trainer.step}.
   */
  accumulate(batch: TokenBatch, coefficients: CoefficientSource): MicroBatchResult {
    const adapter = this.options.adapter;
    return adapter === undefined ? this.accumulateBatch(batch, coefficients) : this.model.withAdapter(adapter, () => this.accumulateBatch(batch, coefficients));
  }

  private accumulateBatch(batch: TokenBatch, coefficients: CoefficientSource): MicroBatchResult {
    validateTokenBatch(batch, this.model.config.vocab_size);
    // Fixed coefficients are exact on any split of the rows: a batch larger than the heap's free bytes
    // allow, or one that would recompute layers that a smaller pass keeps taped, runs as several passes.
    // (A coefficient function sees the rows it is given, so its caller sizes micro-batches with
    // microBatchRows.)
    if (typeof coefficients !== 'function') {
      // After the first part, its gradients stay live while the next parts run: size every part for that.
      const free = freeHeapBytes() - (this.accumulated.size === 0 ? this.trainableBytes : 0);
      const c = this.model.config;
      const rows =
        (this.options.recompute ?? 'auto') === 'auto'
          ? preferredTrainingRows(c, batch.batchSize, batch.seqLen, this.trainableBytes, free, undefined, this.passExtras())
          : maxTrainingRows(c, batch.seqLen, this.trainableBytes, free, this.passExtras());
      if (rows >= 1 && rows < batch.batchSize) return this.accumulateInParts(batch, coefficients, rows);
    }
    return this.accumulatePass(batch, coefficients);
  }

  private accumulateInParts(batch: TokenBatch, coefficients: LossCoefficients, rows: number): MicroBatchResult {
    const t = batch.seqLen;
    const n = batch.batchSize * t;
    const out: MicroBatchResult = { loss: 0, logProbs: new Float32Array(n), entropy: new Float32Array(n), tokens: 0, recomputed: false };
    const arrays = {
      logProbCoef: Float32Array.from(coefficients.logProbCoef),
      entropyCoef: coefficients.entropyCoef && Float32Array.from(coefficients.entropyCoef),
      valueCoef: coefficients.valueCoef && Float32Array.from(coefficients.valueCoef),
    };
    for (let start = 0; start < batch.batchSize; start += rows) {
      const end = Math.min(batch.batchSize, start + rows);
      const c: LossCoefficients = { logProbCoef: arrays.logProbCoef.subarray(start * t, end * t) };
      if (arrays.entropyCoef) c.entropyCoef = arrays.entropyCoef.subarray(start * t, end * t);
      if (arrays.valueCoef) c.valueCoef = arrays.valueCoef.subarray(start * t, end * t);
      const r = this.accumulatePass(sliceRows(batch, start, end), c);
      out.loss += r.loss;
      out.logProbs.set(r.logProbs, start * t);
      out.entropy.set(r.entropy, start * t);
      if (r.values) (out.values ??= new Float32Array(n)).set(r.values, start * t);
      out.tokens += r.tokens;
      out.recomputed ||= r.recomputed;
    }
    return out;
  }

  private accumulatePass(
    batch: TokenBatch,
    coefficients: CoefficientSource,
    prefix?: { state: PrefixState; grads: Array<{ k?: tf.Tensor; v?: tf.Tensor } | undefined> },
  ): MicroBatchResult {
    const mode = this.options.recompute ?? 'auto';
    const c = this.model.config;
    const pastLen = prefix?.state.length ?? 0;
    const plan =
      mode === 'auto'
        ? planTrainingPass(c, batch.batchSize, batch.seqLen, this.trainableBytes, undefined, this.passExtras(pastLen))
        : { recompute: mode, tapedLayers: mode ? 0 : c.num_hidden_layers };
    const vars = [...this.variables.values()];
    let loss: number;
    let grads: Record<string, tf.Tensor>;
    let lpNext: Float32Array;
    let entNext: Float32Array;
    let valNext: Float32Array | undefined;
    if (plan.recompute || prefix) {
      // Rows after a shared prefix always take this path: it returns the gradients of the prefix's keys and values.
      const r = recomputedGradients(this.model, batch, coefficients, vars, plan.tapedLayers, prefix?.state.past);
      ({ loss, grads, lpNext, entNext, valNext } = r);
      if (prefix) {
        r.pastGrads!.forEach((g, i) => {
          const prev = prefix.grads[i];
          const sum = (a?: tf.Tensor, b?: tf.Tensor) => (a && b ? tf.tidy(() => tf.add(a, b)) : (a ?? b));
          prefix.grads[i] = { k: sum(prev?.k, g.k), v: sum(prev?.v, g.v) };
          if (prev?.k && g.k) tf.dispose([prev.k, g.k]);
          if (prev?.v && g.v) tf.dispose([prev.v, g.v]);
        });
      }
    } else {
      let lp: Float32Array | undefined;
      let ent: Float32Array | undefined;
      const r = tf.variableGrads(() => {
        const s = surrogateLoss(this.model, batch, coefficients);
        lp = s.logProbs.dataSync() as Float32Array;
        ent = s.entropy.dataSync() as Float32Array;
        valNext = s.values?.dataSync() as Float32Array | undefined;
        return s.loss;
      }, vars);
      loss = r.value.dataSync()[0];
      r.value.dispose();
      grads = r.grads;
      lpNext = lp!;
      entNext = ent!;
    }
    this.addGradients(grads);
    this.microBatches++;
    const s = alignToTokens(batch, lpNext, entNext, valNext);
    const tokens = s.valid.reduce((n, v) => n + v, 0);
    return { loss, logProbs: s.logProbs, entropy: s.entropy, ...(s.values ? { values: s.values } : {}), tokens, recomputed: plan.recompute };
  }

  private addGradients(grads: Record<string, tf.Tensor>): void {
    for (const [varName, g] of Object.entries(grads)) {
      const name = this.names.get(varName)!;
      const prev = this.accumulated.get(name);
      if (prev) {
        this.accumulated.set(name, tf.add(prev, g));
        tf.dispose([prev, g]);
      } else {
        this.accumulated.set(name, g);
      }
    }
  }

  /**
   * Trains rows that continue one prefix (a GRPO group's samples of one prompt) with the prefix run once
   * instead of once per row: its forward pass now, each {@link SharedPrefixPasses.accumulate} then trains
   * the rows' own tokens against the prefix's keys and values, and {@link SharedPrefixPasses.finish}
   * back-propagates what they sent to the prefix. The gradients equal those of training the whole rows
   * (`shared-prefix.spec.ts`); the prefix's tokens carry no loss. At a 230-token prompt and 8 samples of
   * 128 tokens, a group trains 1,254 tokens' worth instead of 2,864.
   *
   * @example
   * ```ts
   * const group = trainer.sharedPrefix(prompt.slice(0, -1));          // the prompt's last token starts each row
   * for (const rows of chunks(samples, group.microBatchRows(len, samples.length)))
   *   group.accumulate(padBatch(rows.map((s) => [prompt.at(-1), ...s])), coefficients);
   * group.finish();
   * trainer.step();
   * ```
   */
  sharedPrefix(prefix: ArrayLike<number>): SharedPrefixPasses {
    const c = this.model.config;
    if (prefix.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'a shared prefix needs at least one token', 'prefix');
    validateTokenBatch(padBatch([Array.from(prefix)]), c.vocab_size);
    const inAdapter = <T>(fn: () => T): T => (this.options.adapter === undefined ? fn() : this.model.withAdapter(this.options.adapter, fn));
    const state = inAdapter(() => prefixForward(this.model, Int32Array.from(prefix)));
    const grads: Array<{ k?: tf.Tensor; v?: tf.Tensor } | undefined> = [];
    let open = true;
    const release = () => {
      if (!open) return;
      open = false;
      disposePrefix(state);
      tf.dispose(grads.flatMap((g) => [g?.k, g?.v]).filter((x): x is tf.Tensor => x !== undefined));
    };
    const live = () => {
      if (!open) throw new EngineError('ENGINE_INVALID_OPTIONS', 'the shared prefix was already finished or disposed', 'prefix');
    };
    return {
      length: state.length,
      accumulate: (batch, coefficients) => {
        live();
        validateTokenBatch(batch, c.vocab_size);
        return inAdapter(() => this.accumulatePass(batch, coefficients, { state, grads }));
      },
      microBatchRows: (seqLen, rows) => preferredTrainingRows(c, rows, seqLen, this.trainableBytes, undefined, undefined, this.passExtras(state.length)),
      finish: () => {
        live();
        try {
          if (grads.length > 0) this.addGradients(inAdapter(() => prefixBackward(this.model, state, grads, [...this.variables.values()])));
        } finally {
          release();
        }
      },
      dispose: release,
    };
  }

  /**
   * The most rows of `seqLen` tokens one {@link Trainer.accumulate} can take in the heap's free bytes
   * (recomputing layers when it must); callers cut their micro-batches to it. At least 1 when one row
   * fits, else 0 (accumulate would refuse with `ENGINE_OUT_OF_MEMORY`).
   */
  maxMicroBatchRows(seqLen: number): number {
    return maxTrainingRows(this.model.config, seqLen, this.trainableBytes, undefined, this.passExtras());
  }

  /**
   * Rows of `seqLen` tokens per {@link Trainer.accumulate} that train `rows` rows with the least compute:
   * at most {@link Trainer.maxMicroBatchRows}, fewer where a smaller pass recomputes fewer layers.
   */
  microBatchRows(seqLen: number, rows: number): number {
    return preferredTrainingRows(this.model.config, rows, seqLen, this.trainableBytes, undefined, undefined, this.passExtras());
  }

  /**
   * Clips the accumulated gradients by global norm, applies AdamW at the scheduled learning rate, and
   * clears the accumulation. A step with a non-finite gradient norm changes nothing (and is reported).
   * `options` replace the trainer's hyper-parameters for this step (learning rate, betas, eps, weight
   * decay, clipping); they are checked before anything changes.
   */
  step(options: StepOptions = {}): StepResult {
    if (this.microBatches === 0) throw new EngineError('ENGINE_INVALID_OPTIONS', 'step() before any accumulate()', 'step');
    const lr = options.lr ?? this.lr(this.optimizer.steps);
    const maxGradNorm = options.maxGradNorm ?? this.options.maxGradNorm;
    const bad = (message: string, field: string) => new EngineError('ENGINE_INVALID_OPTIONS', message, field);
    if (!(lr >= 0 && Number.isFinite(lr))) throw bad(`lr must be a finite number >= 0, got ${lr}`, 'lr');
    if (maxGradNorm !== undefined && !(maxGradNorm >= 0 && Number.isFinite(maxGradNorm))) throw bad(`maxGradNorm must be a finite number >= 0, got ${maxGradNorm}`, 'maxGradNorm');
    const adam: AdamWStepOptions = {};
    if (options.betas !== undefined) adam.betas = options.betas;
    if (options.eps !== undefined) adam.eps = options.eps;
    if (options.weightDecay !== undefined) adam.weightDecay = options.weightDecay;
    this.optimizer.checkStep(adam);
    const gradNorm = globalNorm(this.accumulated.values());
    const microBatches = this.microBatches;
    if (!Number.isFinite(gradNorm)) {
      this.zeroGrad();
      return { step: this.optimizer.steps, lr, gradNorm, clipped: false, skipped: true, microBatches };
    }
    const factor = clipFactor(gradNorm, maxGradNorm);
    if (factor < 1) {
      for (const [name, g] of this.accumulated) {
        this.accumulated.set(name, tf.mul(g, factor));
        g.dispose();
      }
    }
    this.optimizer.apply(this.accumulated, lr, adam);
    this.zeroGrad();
    return { step: this.optimizer.steps, lr, gradNorm, clipped: factor < 1, skipped: false, microBatches };
  }

  /** One micro-batch and a step. */
  trainStep(batch: TokenBatch, coefficients: CoefficientSource): MicroBatchResult & StepResult {
    const micro = this.accumulate(batch, coefficients);
    return { ...micro, ...this.step() };
  }

  /** The optimizer's step count and moments, to checkpoint a run (see {@link Trainer.loadOptimizerState}). */
  optimizerState(): AdamWState {
    return this.optimizer.exportState();
  }

  /** Restores what {@link Trainer.optimizerState} returned: the learning-rate schedule continues from its step too. */
  loadOptimizerState(state: AdamWState): void {
    this.optimizer.loadState(state);
  }

  /** Drops accumulated gradients without stepping. */
  zeroGrad(): void {
    for (const g of this.accumulated.values()) g.dispose();
    this.accumulated.clear();
    this.microBatches = 0;
  }

  /** Frees optimizer state and accumulated gradients (the model stays). */
  dispose(): void {
    this.zeroGrad();
    this.optimizer.dispose();
  }
}
