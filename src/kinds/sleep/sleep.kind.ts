import { z } from 'zod';
import { defineJobKind } from '../spec/job-kind';

const sleepSpecFields = z.object({
  steps: z.number().int().min(1).max(1_000_000).default(10).describe('Steps to count'),
  step_seconds: z.number().min(0).max(3600).default(1).describe('Pause after each step'),
  fail_at_step: z.number().int().min(1).optional().describe('Fail with an error at this step (tests failure handling)'),
  message: z.string().max(1000).default('tick').describe('Printed on every step'),
});

/** A sleep job's spec after defaults (what its runner reads). */
export type SleepSpec = z.output<typeof sleepSpecFields>;

/**
 * A diagnostic kind that exercises the whole path (queue, placement, child process, logs, metrics,
 * artifacts, cancellation, resumption) without any model: it counts steps, sleeping between them.
 */
export const sleepKind = defineJobKind({
  kind: 'sleep',
  description: 'Diagnostic job: counts steps with a pause between them, reporting logs, metrics and an artifact',
  capabilities: { resumable: true },
  spec: sleepSpecFields,
  runner: async () => (await import('./sleep.runner.js')).runSleep,
});
