import { z } from 'zod';

/**
 * What the API knows about a kind of job: its spec (validated at submission, defaults stored) and
 * whether a job runner can resume it after losing its worker. The code that runs it lives in the job
 * runner (`src/runner`), loaded only in the child process.
 */
export interface JobKind {
  kind: string;
  description: string;
  resumable: boolean;
  /** Its jobs save checkpoints (`model.path: job:<id>` can name them; they count against storage quotas). */
  checkpoints: boolean;
  /** Its jobs update the weights of `model` (full fine-tuning must fit the engine's heap; LoRA leaves the base outside it). */
  trains: boolean;
  /** Kind-specific keys; merged with the common keys into one strict schema. */
  spec: z.ZodObject<z.ZodRawShape>;
}

/** Keys every job has, whatever its kind. */
export const commonSpecShape = {
  name: z.string().min(1).max(128).optional().describe('A label for listings'),
  priority: z.number().int().min(-100).max(100).default(0).describe('Higher runs first; FIFO within a priority'),
  resources: z
    .object({
      gpus: z.number().int().min(0).max(64).default(0).describe('GPUs the job needs (CUDA_VISIBLE_DEVICES)'),
      cpu_slots: z.number().int().min(0).max(1024).default(1).describe('CPU slots the job needs'),
    })
    .strict()
    .default({ gpus: 0, cpu_slots: 1 }),
  max_attempts: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe('Runs allowed when a worker is lost mid-job (resumable kinds default to 3, others to 1)'),
};

export function defineJobKind(kind: JobKind): JobKind {
  return Object.freeze(kind);
}

/** The full strict schema of one kind's job spec. */
export function jobSpecSchema(kind: JobKind) {
  return z
    .object({ kind: z.literal(kind.kind), ...commonSpecShape, ...kind.spec.shape })
    .strict()
    .describe(kind.description);
}
