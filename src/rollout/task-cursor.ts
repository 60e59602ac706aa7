import { Prng } from '@opentinker/engine';

/** Where a {@link TaskCursor} stands: plain JSON, saved in a checkpoint's `trainer_state.json`. */
export interface TaskCursorState {
  /** Passes completed over a finite split (always 0 for an endless one). */
  epoch: number;
  /** Tasks taken in the current epoch (endless: tasks taken since `start`). */
  offset: number;
}

/**
 * Which train tasks come next. A finite split is walked in epochs, each a shuffle seeded by (seed,
 * epoch), so a cursor restored from its state continues with exactly the tasks the lost run would have
 * taken; a batch that runs past the end of an epoch continues into the next one. An endless split
 * (a generator, `size` null) is walked in order from `start`.
 */
export class TaskCursor {
  private epochOrder: { epoch: number; order: Uint32Array } | null = null;
  private position: TaskCursorState;

  constructor(
    readonly size: number | null,
    private readonly seed: number,
    /** First index of an endless split (e.g. after the tasks an SFT warm-up imitated). */
    private readonly start = 0,
    state?: TaskCursorState,
  ) {
    if (size !== null && !(Number.isInteger(size) && size > 0)) throw new Error(`The train split is empty (size ${size})`);
    this.position = state ? TaskCursor.checkState(state) : { epoch: 0, offset: 0 };
    if (size !== null && this.position.offset > size) throw new Error(`Task cursor offset ${this.position.offset} is past the split (size ${size})`);
  }

  get state(): TaskCursorState {
    return { ...this.position };
  }

  /** The next `n` task indices. */
  next(n: number): number[] {
    const out: number[] = [];
    while (out.length < n) {
      if (this.size === null) {
        out.push(this.start + this.position.offset++);
        continue;
      }
      if (this.position.offset === this.size) this.position = { epoch: this.position.epoch + 1, offset: 0 };
      out.push(this.order(this.position.epoch)[this.position.offset++]);
    }
    return out;
  }

  private order(epoch: number): Uint32Array {
    if (this.epochOrder?.epoch !== epoch) this.epochOrder = { epoch, order: shuffledRange(this.size!, this.seed * 1_000_003 + epoch) };
    return this.epochOrder.order;
  }

  private static checkState(state: TaskCursorState): TaskCursorState {
    const ok = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
    if (!state || !ok(state.epoch) || !ok(state.offset)) throw new Error(`Not a task cursor state: ${JSON.stringify(state)}`);
    return { epoch: state.epoch, offset: state.offset };
  }
}

/** 0..n-1 in a seeded Fisher–Yates order. */
export function shuffledRange(n: number, seed: number): Uint32Array {
  const rng = new Prng(seed);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

/**
 * RL steps of a run: `total_steps` when given, else `num_epochs` passes over a finite split (batches
 * run across epoch boundaries, so the last partial batch is not dropped), else 100.
 */
export function plannedSteps(o: { totalSteps?: number; numEpochs?: number; batchSize: number; trainSize: number | null }): number {
  if (o.totalSteps !== undefined) return o.totalSteps;
  if (o.numEpochs !== undefined) {
    if (o.trainSize === null) throw new Error('num_epochs needs a finite train split; this environment generates tasks endlessly: give total_steps');
    return Math.max(1, Math.ceil((o.numEpochs * o.trainSize) / o.batchSize));
  }
  return 100;
}
