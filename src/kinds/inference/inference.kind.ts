import { z } from 'zod';
import { RESULTS_FILE } from './inference-files';
import { defineJobKind } from '../spec/job-kind';
import { environmentSpec, modelSpec, rolloutSpec } from '../../rollout/rl-spec';

const inferenceSpecFields = z.object({
  environment: environmentSpec,
  model: modelSpec,
  rollout: rolloutSpec.default(rolloutSpec.parse({ temperature: 0 })),
  split: z.enum(['train', 'test']).default('test'),
  num_tasks: z.number().int().min(1).max(1_000_000).default(100).describe('Tasks (or games); at most the split'),
  start_index: z.number().int().min(0).default(0),
  samples_per_task: z.number().int().min(1).max(1024).default(1),
  batch_size: z.number().int().min(1).max(4096).default(32).describe('Episodes sampled together'),
  seed: z.number().int().min(0).default(0),
});

/** An inference job's spec after defaults (what the job runner gets, minus the common keys). */
export type InferenceSpec = z.output<typeof inferenceSpecFields>;

/**
 * Runs a policy (a checkpoint of a train job, a model folder or a preset) against an environment on
 * N tasks and writes one JSON line per episode (`results.jsonl`) plus summary metrics.
 */
export const inferenceKind = defineJobKind({
  kind: 'inference',
  description: 'Run a policy against an environment on N tasks; results as JSONL',
  capabilities: { results: RESULTS_FILE },
  spec: inferenceSpecFields,
  runner: async () => (await import('./inference.runner.js')).runInference,
});
