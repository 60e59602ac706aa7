import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunContext } from '../../runner/run-context';
import type { SleepSpec } from './sleep.kind';

/** Runs the diagnostic `sleep` kind; see `sleep.kind.ts`. */
export async function runSleep(ctx: RunContext<SleepSpec>): Promise<void> {
  const { spec } = ctx;
  const resumed = (ctx.resumeState as { step?: number } | null)?.step ?? 0;
  if (resumed > 0) ctx.log(`resuming after step ${resumed} (attempt ${ctx.attempt})`);
  const started = Date.now();
  for (let step = resumed + 1; step <= spec.steps; step++) {
    if (spec.fail_at_step === step) throw new Error(`failing at step ${step} as the spec asked (fail_at_step)`);
    ctx.log(`step ${step}/${spec.steps}: ${spec.message}`);
    ctx.metrics(step, { step_fraction: step / spec.steps, elapsed_seconds: (Date.now() - started) / 1000 });
    ctx.progress(step, spec.steps, spec.message);
    ctx.checkpoint({ step });
    if (spec.step_seconds > 0) {
      try {
        await sleep(spec.step_seconds * 1000, undefined, { signal: ctx.signal });
      } catch {
        ctx.log(`stopping at step ${step}: ${String(ctx.signal.reason ?? 'aborted')}`);
        return;
      }
    }
  }
  const path = join(ctx.workDir, 'result.json');
  writeFileSync(path, JSON.stringify({ steps: spec.steps, resumed_from: resumed, seconds: (Date.now() - started) / 1000 }, null, 2));
  ctx.artifact('result.json', path);
  ctx.log('done');
}
