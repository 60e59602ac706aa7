import { z } from 'zod';
import { parseOrThrow } from '../../core/zod-error';
import type { KindRunner } from '../../runner/run-context';

/**
 * What a kind's jobs can do. The API, the worker and the job runner ask these questions of the kind
 * (never of its name), so adding a kind is its folder plus one line in the registry (`job-kinds.ts`);
 * `GET /v1/job-kinds` answers them to clients (the dashboard picks a job's sections by them).
 */
export const JobKindCapabilities = z.object({
  resumable: z.boolean().describe('A job re-queued after losing its worker continues from its resume state (`max_attempts` defaults to 3, else 1)'),
  checkpoints: z.boolean().describe('Its jobs save checkpoints (`model.path: job:<id>` can name them; they count against storage quotas)'),
  trains: z.boolean().describe('Its jobs update the weights of `model` (full fine-tuning must fit the engine’s heap; LoRA leaves the base outside it)'),
  calls: z.boolean().describe('Its jobs answer calls made through `POST /v1/jobs/:id/calls` while they run (the worker relays them)'),
  results: z.string().nullable().describe('The JSON-lines file of per-episode results its jobs write (`GET /v1/jobs/:id/results`), or null'),
});
export type JobKindCapabilities = z.output<typeof JobKindCapabilities>;

/** Keys every job has, whatever its kind. */
export const commonSpecShape = {
  name: z.string().min(1).max(128).optional().describe('A label for listings'),
  priority: z
    .number()
    .int()
    .min(-100)
    .max(100)
    .default(0)
    .describe("Orders your own jobs (higher first, then oldest); across users only an admin's priority above the server's max_user_priority counts"),
  resources: z
    .object({
      gpus: z.number().int().min(0).max(64).default(0).describe('GPUs the job needs (CUDA_VISIBLE_DEVICES)'),
      cpu_slots: z.number().int().min(0).max(1024).default(1).describe('CPU slots the job needs'),
    })
    .strict()
    .default({ gpus: 0, cpu_slots: 1 }),
  max_attempts: z.number().int().min(1).max(20).optional().describe('Runs allowed when a worker is lost mid-job (resumable kinds default to 3, others to 1)'),
};

/** The common keys of a spec after defaults (what is stored, and what a runner gets besides its own keys). */
export interface CommonSpec {
  kind: string;
  name?: string;
  priority: number;
  resources: { gpus: number; cpu_slots: number };
  max_attempts: number;
}

/** A whole job spec of a kind whose own keys are `Fields`, after defaults. */
export type JobSpecOf<Fields extends z.ZodRawShape> = CommonSpec & z.output<z.ZodObject<Fields>>;

export interface JobKindDefinition<Fields extends z.ZodRawShape> {
  /** The spec's `kind` value: lower case, stable (it is stored with every job). */
  kind: string;
  /** One line, shown in the OpenAPI document as the description of the kind's spec. */
  description: string;
  /** Kind-specific keys; merged with the common keys into one strict schema. */
  spec: z.ZodObject<Fields>;
  /** Capabilities the kind has; the rest are off (false, null). */
  capabilities?: Partial<JobKindCapabilities>;
  /**
   * How the worker hands recorded calls to the runner: `one-at-a-time` (the default; the next once the
   * last is answered, for kinds with `calls`), or `all` (every call as soon as it is recorded, for a
   * runner that orders and batches calls itself, such as the Tinker runner, whose calls come from the
   * `/api/v1` routes rather than `POST /v1/jobs/:id/calls`).
   */
  callRelay?: CallRelay;
  /** Jobs of this kind are submitted by the server itself (the Tinker API), never through `POST /v1/jobs`. */
  internal?: boolean;
  /**
   * Loads the code that runs a job, in the job runner process only: a dynamic import, so the API and the
   * worker (which import every kind for its schema and capabilities) never load a runner's dependencies.
   */
  runner(): Promise<KindRunner<JobSpecOf<Fields>>>;
}

const JOB_KIND_TYPE = '@opentinker/JobKind';

/** How a worker hands a job runner the calls recorded for it (see {@link JobKindDefinition.callRelay}). */
export type CallRelay = 'one-at-a-time' | 'all';

/** One kind of job: its spec schema, what its jobs can do, and how to run one. Made by {@link defineJobKind}. */
export interface JobKind<Fields extends z.ZodRawShape = z.ZodRawShape> extends Readonly<JobKindCapabilities> {
  readonly $$type: typeof JOB_KIND_TYPE;
  readonly kind: string;
  readonly description: string;
  /** How the worker relays calls to its runner: none (no calls), one at a time, or all at once (see {@link JobKindDefinition.callRelay}). */
  readonly callRelay: CallRelay | null;
  /** Submitted by the server only (see {@link JobKindDefinition.internal}). */
  readonly internal: boolean;
  /** Kind-specific keys (without the common ones). */
  readonly spec: z.ZodObject<Fields>;
  /** The whole strict schema: `kind`, the common keys and the kind's (the OpenAPI component `JobSpec_<kind>`). */
  readonly schema: z.ZodObject<z.ZodRawShape>;
  /** {@link schema} followed by the defaults that depend on the kind (`max_attempts` by resumability): what {@link parse} runs. */
  readonly parser: z.ZodType<JobSpecOf<Fields>>;
  /**
   * Validates a spec, submitted or stored: unknown keys are refused with their path, every default is
   * filled in (`max_attempts` by resumability). Throws `OT_ERR_VALIDATION` naming the field.
   */
  parse(body: unknown): JobSpecOf<Fields>;
  /** The code that runs a job (see {@link JobKindDefinition.runner}). */
  runner(): Promise<KindRunner<JobSpecOf<Fields>>>;
}

/** A kind of any spec, as the registry holds them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobKind = JobKind<any>;

const NO_CAPABILITIES: JobKindCapabilities = { resumable: false, checkpoints: false, trains: false, calls: false, results: null };

export function defineJobKind<Fields extends z.ZodRawShape>(definition: JobKindDefinition<Fields>): JobKind<Fields> {
  const schema = z
    .object({ kind: z.literal(definition.kind), ...commonSpecShape, ...definition.spec.shape })
    .strict()
    .describe(definition.description)
    .meta({ id: `JobSpec_${definition.kind}` });
  const capabilities = { ...NO_CAPABILITIES, ...definition.capabilities };
  const parser = schema.transform((data) => ({ ...data, max_attempts: (data as { max_attempts?: number }).max_attempts ?? (capabilities.resumable ? 3 : 1) }) as JobSpecOf<Fields>);
  const kind: JobKind<Fields> = {
    $$type: JOB_KIND_TYPE,
    kind: definition.kind,
    description: definition.description,
    callRelay: definition.callRelay ?? (capabilities.calls ? 'one-at-a-time' : null),
    internal: definition.internal ?? false,
    spec: definition.spec,
    schema: schema as unknown as z.ZodObject<z.ZodRawShape>,
    parser,
    ...capabilities,
    parse: (body) => parseOrThrow(parser, body),
    runner: definition.runner,
  };
  return Object.freeze(kind);
}

export function isJobKind(value: unknown): value is AnyJobKind {
  return typeof value === 'object' && value !== null && (value as { $$type?: unknown }).$$type === JOB_KIND_TYPE;
}
