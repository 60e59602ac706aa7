/**
 * A learning-rate schedule: the rate for an optimizer step, given how many steps were taken before it
 * (0 for the first).
 */
export type LrSchedule = (step: number) => number;

/**
 * Linear warm-up from 0 to `peak` over `warmupSteps`, then cosine decay to `peak · minRatio` at
 * `totalSteps` (held there afterwards), as `transformers`' `get_cosine_schedule_with_warmup` with a floor.
 *
 * @example
 * ```ts
 * const trainer = new Trainer(model, { lr: warmupCosineSchedule({ peak: 3e-4, warmupSteps: 50, totalSteps: 1000 }) });
 * ```
 */
export function warmupCosineSchedule(o: { peak: number; warmupSteps: number; totalSteps: number; minRatio?: number }): LrSchedule {
  const floor = o.minRatio ?? 0;
  return (step) => {
    if (step < o.warmupSteps) return (o.peak * (step + 1)) / (o.warmupSteps + 1);
    const span = Math.max(1, o.totalSteps - o.warmupSteps);
    const progress = Math.min(1, (step - o.warmupSteps) / span);
    return o.peak * (floor + (1 - floor) * 0.5 * (1 + Math.cos(Math.PI * progress)));
  };
}

/**
 * Linear warm-up over `warmupSteps`, then constant.
 *
 * @example
 * ```ts
 * warmupConstantSchedule({ peak: 1e-4, warmupSteps: 10 })(0); // 1e-5 · 10 / 11
 * ```
 */
export function warmupConstantSchedule(o: { peak: number; warmupSteps: number }): LrSchedule {
  return (step) => (step < o.warmupSteps ? (o.peak * (step + 1)) / (o.warmupSteps + 1) : o.peak);
}
