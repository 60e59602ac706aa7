import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import type { LoraAdapterConfig } from '../io/peft-adapter';

/*
 * The LoRA state a model holds: named adapters (their factors as variables the trainer updates, or as
 * frozen tensors for one that only samples), immutable snapshots of them, and what a pass applies: one
 * adapter for every row, or a different one per row ("row plan"), which lets requests of several
 * adapters share one pass over the base weights.
 */

/** Factors of one module, held transposed so `x·A·B` is two plain products: `A` `[in, r]`, `B` `[r, out]`. */
export interface LoraFactorTensors {
  A: tf.Tensor2D;
  B: tf.Tensor2D;
}

/** One adapter's factors by module path (`model.layers.0.self_attn.q_proj`, `lm_head`). @internal */
export interface LoraState {
  config: LoraAdapterConfig;
  scaling: number;
  factors: Map<string, LoraFactorTensors>;
  rawConfig?: Record<string, unknown>;
  /** Whether the factors are variables the trainer may update (a snapshot's and a frozen adapter's are not). */
  trainable: boolean;
}

/** Frees the factors of a state. @internal */
export function disposeLoraState(state: LoraState): void {
  for (const f of state.factors.values()) tf.dispose([f.A, f.B]);
  state.factors.clear();
}

/** Heap bytes of a state's factors. @internal */
export function loraStateFactorBytes(state: LoraState): number {
  let n = 0;
  for (const f of state.factors.values()) n += (f.A.size + f.B.size) * 4;
  return n;
}

/**
 * An immutable copy of an adapter's factors, taken by `Model.snapshotAdapter`: sampling with it keeps
 * using the weights of the moment it was taken while the adapter trains on. It costs the factors' size
 * (no gradients, no optimizer state); several can be alive at once. Free it with {@link AdapterSnapshot.dispose}
 * (the model frees those still alive when it is disposed).
 */
export class AdapterSnapshot {
  private state?: LoraState;

  /** @internal */
  constructor(
    /** The adapter it was taken from. */
    readonly adapter: string,
    state: LoraState,
    /** The model it belongs to (a snapshot only runs on its own model). @internal */
    readonly owner: object,
    private readonly onDispose: (snapshot: AdapterSnapshot) => void,
  ) {
    this.state = state;
    this.bytes = loraStateFactorBytes(state);
  }

  /** Heap bytes of its factors. */
  readonly bytes: number;

  /** The adapter config (rank, alpha, targets) it was taken with. */
  get config(): LoraAdapterConfig {
    return this.live().config;
  }

  get isDisposed(): boolean {
    return this.state === undefined;
  }

  /** The factors (throws `ENGINE_DISPOSED` after {@link AdapterSnapshot.dispose}). @internal */
  live(): LoraState {
    if (!this.state) throw new EngineError('ENGINE_DISPOSED', `the snapshot of adapter "${this.adapter}" was disposed`, 'adapter');
    return this.state;
  }

  /** Frees the factors; later use throws `ENGINE_DISPOSED`. */
  dispose(): void {
    if (!this.state) return;
    disposeLoraState(this.state);
    this.state = undefined;
    this.onDispose(this);
  }
}

/**
 * Which LoRA weights a pass runs with: an adapter by name, a snapshot, or `null` for the base alone.
 * An array gives one per row of the batch.
 */
export type AdapterRef = string | AdapterSnapshot | null;

/**
 * Per-row adapters compiled for a pass: for each module, the factors of every adapter involved side by
 * side (`A` `[in, Σr]`, `B` `[Σr, out]` with each adapter's scaling folded in) and a 0/1 mask `[rows, Σr]`
 * that keeps, for each row, its own adapter's columns. A linear then adds `((x·A) ⊙ mask)·B`: two
 * products however many adapters share the pass (against two per adapter, with a gather and a scatter
 * each, for a pass cut by adapter). Rows without an adapter have a zero mask. @internal
 */
export interface RowAdapterPlan {
  rows: number;
  modules: Map<string, { A: tf.Tensor2D; B: tf.Tensor2D; mask: tf.Tensor2D }>;
}

/** Compiles per-row states (undefined = no adapter) into a {@link RowAdapterPlan}; the caller disposes it with {@link disposeRowPlan}. @internal */
export function compileRowPlan(rowStates: ReadonlyArray<LoraState | undefined>): RowAdapterPlan {
  const distinct = [...new Set(rowStates.filter((s): s is LoraState => s !== undefined))];
  const moduleNames = new Set<string>();
  for (const s of distinct) for (const m of s.factors.keys()) moduleNames.add(m);
  const modules: RowAdapterPlan['modules'] = new Map();
  const rows = rowStates.length;
  for (const module of moduleNames) {
    const users = distinct.filter((s) => s.factors.has(module));
    const offsets = new Map<LoraState, [number, number]>();
    let width = 0;
    for (const s of users) {
      const r = s.factors.get(module)!.A.shape[1];
      offsets.set(s, [width, r]);
      width += r;
    }
    const mask = new Float32Array(rows * width);
    rowStates.forEach((s, row) => {
      const at = s && offsets.get(s);
      if (at) mask.fill(1, row * width + at[0], row * width + at[0] + at[1]);
    });
    const entry = tf.tidy(() => ({
      A: tf.concat(
        users.map((s) => s.factors.get(module)!.A),
        1,
      ) as tf.Tensor2D,
      B: tf.concat(
        users.map((s) => tf.mul(s.factors.get(module)!.B, s.scaling)),
        0,
      ) as tf.Tensor2D,
      mask: tf.tensor2d(mask, [rows, width]),
    }));
    modules.set(module, entry);
  }
  return { rows, modules };
}

/** Frees a plan's tensors. @internal */
export function disposeRowPlan(plan: RowAdapterPlan): void {
  for (const e of plan.modules.values()) tf.dispose([e.A, e.B, e.mask]);
  plan.modules.clear();
}

/**
 * A plan's mask for `n` rows of activations: `[rows, Σr]` as it is when each row of the batch has one
 * position (decoding, last positions), else repeated over each row's `n / rows` positions. @internal
 */
export function rowMask(plan: RowAdapterPlan, mask: tf.Tensor2D, n: number): tf.Tensor2D {
  if (n === plan.rows) return mask;
  const t = n / plan.rows;
  if (!Number.isInteger(t))
    throw new EngineError('ENGINE_INVALID_INPUT', `a pass over ${n} positions does not split into the ${plan.rows} rows its adapters were given for`, 'adapter');
  const width = mask.shape[1];
  return tf.reshape(tf.tile(tf.reshape(mask, [plan.rows, 1, width]), [1, t, 1]), [n, width]);
}
