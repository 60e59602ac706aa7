/** What {@link fit} calls on a session (a `TrainingSession` has these; a test double may too). */
export interface FitSession {
  validate(args: { tasks?: unknown[]; size?: number }, options: FitCallOptions): Promise<Record<string, number>>;
  saveCheckpoint(options: FitCallOptions): Promise<{ step: number; dir: string }>;
  trainStep(args: { tasks?: unknown[]; batch_size?: number }, options: FitCallOptions): Promise<Record<string, number>>;
}

/** The call options {@link fit} passes: the call id that makes a replayed step idempotent, and the abort signal. */
export interface FitCallOptions {
  callId: string;
  signal?: AbortSignal;
}

/** Options of {@link fit}. */
export interface FitOptions {
  /**
   * Your training tasks, in the environment's task shape (math: `{ prompt: [...], ground_truth }`),
   * taken in order in batches of `batchSize` for `epochs`. Omit them to let the server draw the next
   * tasks of the environment's train split.
   */
  tasks?: unknown[];
  /** Passes over `tasks` (default 1). */
  epochs?: number;
  /** Train steps: required without `tasks`; with them, a cap. */
  steps?: number;
  /** Tasks per step (default: the session spec's `batch_size`; required with `tasks`). */
  batchSize?: number;
  /** Validation tasks; default: the first `valSize` tasks of the test split (default: the spec's `val_batch_size`). */
  valTasks?: unknown[];
  valSize?: number;
  /** Validate every N steps (0: only before and after training, as the defaults do). */
  testFreq?: number;
  /** Save a checkpoint every N steps and at the end (0: only at the end). */
  saveFreq?: number;
  /** Validate once before the first step (default true). */
  valBeforeTrain?: boolean;
  /**
   * Prefix of the call ids (default `fit`). Calls are idempotent by id, so running `fit` again with the
   * same `runId` on the same session (after your process crashed) replays the steps the server already
   * did — their recorded metrics come back at once — and continues from the first step it did not.
   */
  runId?: string;
  onStep?(step: number, metrics: Record<string, number>): void;
  onValidation?(step: number, metrics: Record<string, number>): void;
  onCheckpoint?(step: number, checkpoint: { step: number; dir: string }): void;
  signal?: AbortSignal;
}

/** What {@link fit} did. */
export interface FitResult {
  steps: number;
  history: { step: number; metrics: Record<string, number> }[];
  validations: { step: number; metrics: Record<string, number> }[];
  checkpoints: { step: number; dir: string }[];
}

/**
 * Trains a session the way OpenTinker's `ServiceClient.fit` does: validation before training, then
 * train steps over your tasks (or the environment's), validating every `testFreq` steps and saving
 * every `saveFreq` steps, then a last validation and checkpoint.
 *
 * @example
 * ```ts
 * const session = await client.sessions.start({ kind: 'session', environment: { id: 'math' }, model: { preset: 'tiny-char' } });
 * const result = await fit(session, { steps: 20, testFreq: 5, onStep: (s, m) => console.log(s, m['reward/mean']) });
 * console.log(result.validations.at(-1)?.metrics['val/accuracy']);
 * await session.close();
 * ```
 */
export async function fit(session: FitSession, options: FitOptions): Promise<FitResult> {
  const batches = planBatches(options);
  const run = options.runId ?? 'fit';
  const valArgs = options.valTasks ? { tasks: options.valTasks } : options.valSize ? { size: options.valSize } : {};
  const call = { signal: options.signal };
  const result: FitResult = { steps: 0, history: [], validations: [], checkpoints: [] };

  const validate = async (step: number) => {
    const metrics = await session.validate(valArgs, { ...call, callId: `${run}-val-${step}` });
    result.validations.push({ step, metrics });
    options.onValidation?.(step, metrics);
  };
  const save = async (step: number) => {
    const checkpoint = await session.saveCheckpoint({ ...call, callId: `${run}-save-${step}` });
    result.checkpoints.push(checkpoint);
    options.onCheckpoint?.(step, checkpoint);
  };

  if (options.valBeforeTrain ?? true) await validate(0);
  for (let step = 1; step <= batches.length; step++) {
    const metrics = await session.trainStep(batches[step - 1], { ...call, callId: `${run}-train-${step}` });
    result.steps = step;
    result.history.push({ step, metrics });
    options.onStep?.(step, metrics);
    const last = step === batches.length;
    if (options.testFreq && step % options.testFreq === 0 && !last) await validate(step);
    if (options.saveFreq && step % options.saveFreq === 0 && !last) await save(step);
  }
  if (batches.length > 0) {
    await validate(batches.length);
    await save(batches.length);
  }
  return result;
}

function planBatches(o: FitOptions): { tasks?: unknown[]; batch_size?: number }[] {
  const positive = (name: string, v: number | undefined) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw new RangeError(`fit: ${name} must be a positive integer (got ${v})`);
  };
  positive('steps', o.steps);
  positive('epochs', o.epochs);
  positive('batchSize', o.batchSize);
  if (!o.tasks) {
    if (o.steps === undefined) throw new RangeError('fit: give steps, or tasks to iterate over');
    return Array.from({ length: o.steps }, () => (o.batchSize ? { batch_size: o.batchSize } : {}));
  }
  if (o.tasks.length === 0) throw new RangeError('fit: tasks is empty');
  const size = o.batchSize ?? Math.min(16, o.tasks.length);
  const out: { tasks: unknown[] }[] = [];
  for (let epoch = 0; epoch < (o.epochs ?? 1); epoch++) {
    for (let i = 0; i < o.tasks.length; i += size) out.push({ tasks: o.tasks.slice(i, i + size) });
  }
  return o.steps === undefined ? out : out.slice(0, o.steps);
}
