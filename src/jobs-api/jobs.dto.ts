import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import { iso } from '../core/columns';
import { PageQuery, pageOf } from '../core/page-query.dto';
import { serializerSchema } from '../core/serializer-schema';
import type { JsonText } from '../core/zod-api.decorators';
import type { JobArtifactEntity } from '../jobs/job-artifact.entity';
import type { JobMetricEntity } from '../jobs/job-metric.entity';
import { maskSecrets } from '../jobs/job-secrets';
import { JOB_STATES } from '../jobs/job.entity';
import { JobKindCapabilities } from '../kinds/spec/job-kind';
import type { AnyJobKind } from '../kinds/spec/job-kind';
import type { JobEntity, JobState, JobSummary } from '../jobs/job.entity';

const isJobState = (s: string): s is JobState => (JOB_STATES as readonly string[]).includes(s);

export const ListJobsQuery = PageQuery.extend({
  // `state=queued,running`; a repeated parameter (`state=queued&state=running`) means the same.
  state: z
    .preprocess(
      (v) => (Array.isArray(v) ? v.join(',') : v),
      z.string().transform((value, ctx) => {
        const states = value.split(',').map((s) => s.trim());
        if (states.every(isJobState)) return states;
        ctx.addIssue({ code: 'custom', message: `state must be one or more of ${JOB_STATES.join(', ')}` });
        return z.NEVER;
      }),
    )
    .optional()
    .describe('Comma-separated states')
    .meta({ example: 'queued,running' }),
  kind: z.string().optional().meta({ example: 'sleep' }),
});
export type ListJobsQuery = z.output<typeof ListJobsQuery>;

export const MetricsQuery = z
  .object({
    name: z.string().optional().describe('Only this metric').meta({ example: 'reward_mean' }),
    after_step: z.coerce.number().int().optional().describe('Only points after this step'),
    limit: z.coerce.number().int().min(1).max(100_000).default(10_000),
  })
  .strict();

export const LogsQuery = z.object({ tail: z.coerce.number().int().min(1).max(100_000).optional().describe('Only the last N lines') }).strict();

export const EventsQuery = z.object({ after: z.coerce.number().int().min(0).optional().describe('Resume after this event id (same as the Last-Event-ID header)') }).strict();

const JobResourcesDto = z.object({ gpus: z.number().int(), cpu_slots: z.number().int() }).meta({ id: 'JobResourcesDto' });

const JobProgressDto = z.object({ step: z.number(), total: z.number().nullable(), message: z.string().nullable() }).meta({ id: 'JobProgressDto' });

/** In the order {@link jobSummaryDto} writes the fields (fast-json-stringify writes them in the schema's). */
const summaryShape = {
  id: z.uuid(),
  kind: z.string().meta({ example: 'sleep' }),
  name: z.string().nullable(),
  state: z.enum(JOB_STATES),
  owner_id: z.uuid(),
  priority: z.number().int(),
  environment: z.string().nullable().describe('The environment id the spec names (train, inference and session jobs)').meta({ example: 'math' }),
  resources: JobResourcesDto,
  devices: z
    .array(z.string())
    .nullable()
    .meta({ example: ['gpu:0', 'cpu:0'] }),
  worker_id: z.string().nullable(),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  error: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  progress: JobProgressDto.nullable(),
  cancel_requested: z.boolean(),
  created_at: z.iso.datetime(),
  started_at: z.iso.datetime().nullable(),
  finished_at: z.iso.datetime().nullable(),
  updated_at: z.iso.datetime(),
};

/**
 * A job as listings show it (`GET /v1/jobs`): everything but the spec, which is the largest field and
 * repeats kind, name, priority and resources. `GET /v1/jobs/:id` answers the full {@link JobDto}.
 */
export const JobSummaryDto = z.object(summaryShape).meta({ id: 'JobSummaryDto' });
export type JobSummaryDto = z.output<typeof JobSummaryDto>;

/** A job with its stored spec (`GET /v1/jobs/:id`, submit, cancel). */
export const JobDto = z.object({ ...summaryShape, spec: z.record(z.string(), z.unknown()).describe('The validated spec with every default filled in') }).meta({ id: 'JobDto' });
export type JobDto = z.output<typeof JobDto>;

export const JobPageDto = pageOf(JobSummaryDto).meta({ id: 'JobPageDto' });
export type JobPageDto = z.output<typeof JobPageDto>;

export function jobSummaryDto(j: JobSummary): JobSummaryDto {
  return {
    id: j.id,
    kind: j.kind,
    name: j.name,
    state: j.state,
    owner_id: j.ownerId,
    priority: j.priority,
    environment: j.environmentId,
    resources: j.resources,
    devices: j.devices,
    worker_id: j.workerId,
    attempts: j.attempts,
    max_attempts: j.maxAttempts,
    error: j.error,
    exit_code: j.exitCode,
    progress: j.progress,
    cancel_requested: j.cancelRequestedAt !== null,
    created_at: iso(j.createdAt)!,
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    updated_at: iso(j.updatedAt)!,
  };
}

export function jobDto(j: JobEntity): JobDto {
  return { ...jobSummaryDto(j), spec: redactSpec(j.spec) };
}

/** What the API shows instead of a secret the spec holds. */
export const REDACTED = '[redacted]';

/**
 * The spec as the API shows it: secrets (a remote environment's bearer token, a W&B key) are kept for
 * the job runner but never sent back (job pages are seen by admins, dashboards and logs of HTTP clients).
 */
export function redactSpec(spec: Record<string, unknown>): Record<string, unknown> {
  return maskSecrets(spec, REDACTED);
}

/**
 * {@link JobSummaryDto} for fast-json-stringify, which writes a job in about two thirds of
 * `JSON.stringify`'s time: the list is the busiest read route. `jobs.dto.spec.ts` checks the bytes
 * against `JSON.stringify`.
 */
export const JOB_SUMMARY_SERIALIZER_SCHEMA = serializerSchema(JobSummaryDto);

/** One item of a page, as the list route writes it. */
export const writeJobSummary = fastJson(JOB_SUMMARY_SERIALIZER_SCHEMA as never) as (job: JobSummaryDto) => string;

/** A {@link JobPageDto} from its items' JSON: the bytes `JSON.stringify` writes for the page. */
export function jobPageJson(items: string[], page: number, limit: number, total: number): JsonText<JobPageDto> {
  return `{"items":[${items.join(',')}],"page":${JSON.stringify(page)},"limit":${JSON.stringify(limit)},"total":${JSON.stringify(total)}}` as JsonText<JobPageDto>;
}

export const MetricPointDto = z.object({ step: z.number().int(), name: z.string(), value: z.number(), time: z.iso.datetime() }).meta({ id: 'MetricPointDto' });
export type MetricPointDto = z.output<typeof MetricPointDto>;

export function metricPointDto(m: JobMetricEntity): MetricPointDto {
  return { step: m.step, name: m.name, value: m.value, time: iso(m.createdAt)! };
}

export const ArtifactDto = z
  .object({ name: z.string().meta({ example: 'result.json' }), size: z.number().int(), worker_id: z.string().nullable(), created_at: z.iso.datetime() })
  .meta({ id: 'ArtifactDto' });
export type ArtifactDto = z.output<typeof ArtifactDto>;

export function artifactDto(a: JobArtifactEntity): ArtifactDto {
  return { name: a.name, size: a.size, worker_id: a.workerId, created_at: iso(a.createdAt)! };
}

/** A kind of job this server runs, and what its jobs can do (`GET /v1/job-kinds`). */
export const JobKindDto = z.object({ kind: z.string().meta({ example: 'train' }), description: z.string(), ...JobKindCapabilities.shape }).meta({ id: 'JobKindDto' });
export type JobKindDto = z.output<typeof JobKindDto>;

export function jobKindDto(k: AnyJobKind): JobKindDto {
  return { kind: k.kind, description: k.description, resumable: k.resumable, checkpoints: k.checkpoints, trains: k.trains, calls: k.calls, results: k.results };
}
