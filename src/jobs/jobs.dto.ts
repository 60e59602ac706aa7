import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import fastJson from 'fast-json-stringify';
import { Transform, Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { iso } from '../core/database/columns';
import { PageQuery } from '../core/page-query.dto';
import type { JobArtifactEntity } from './job-artifact.entity';
import type { JobMetricEntity } from './job-metric.entity';
import { maskSecrets } from './job-secrets';
import { JOB_STATES } from './job.entity';
import type { JobEntity, JobState, JobSummary } from './job.entity';

export class ListJobsQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Comma-separated states', example: 'queued,running' })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value))
  @IsIn(JOB_STATES, { each: true, message: `state must be one or more of ${JOB_STATES.join(', ')}` })
  state?: JobState[];

  @ApiPropertyOptional({ example: 'sleep' })
  @IsOptional()
  @IsString()
  kind?: string;
}

export class MetricsQuery {
  @ApiPropertyOptional({ description: 'Only this metric', example: 'reward_mean' })
  @IsOptional()
  @IsString()
  name?: string;

  @ApiPropertyOptional({ description: 'Only points after this step' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  after_step?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 100000, default: 10000 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100_000)
  limit: number = 10_000;
}

export class LogsQuery {
  @ApiPropertyOptional({ description: 'Only the last N lines', minimum: 1, maximum: 100000 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100_000)
  tail?: number;
}

export class EventsQuery {
  @ApiPropertyOptional({ description: 'Resume after this event id (same as the Last-Event-ID header)' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  after?: number;
}

class JobResourcesDto {
  @ApiProperty() gpus!: number;
  @ApiProperty() cpu_slots!: number;
}

class JobProgressDto {
  @ApiProperty() step!: number;
  @ApiProperty({ nullable: true, type: Number }) total!: number | null;
  @ApiProperty({ nullable: true, type: String }) message!: string | null;
}

/**
 * A job as listings show it (`GET /v1/jobs`): everything but the spec, which is the largest field and
 * repeats kind, name, priority and resources. `GET /v1/jobs/:id` answers the full {@link JobDto}.
 */
export class JobSummaryDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ example: 'sleep' }) kind!: string;
  @ApiProperty({ nullable: true, type: String }) name!: string | null;
  @ApiProperty({ enum: JOB_STATES }) state!: JobState;
  @ApiProperty({ format: 'uuid' }) owner_id!: string;
  @ApiProperty() priority!: number;
  @ApiProperty({ nullable: true, type: String, example: 'math', description: 'The environment id the spec names (train, inference and session jobs)' })
  environment!: string | null;
  @ApiProperty({ type: JobResourcesDto }) resources!: JobResourcesDto;
  @ApiProperty({ nullable: true, type: [String], example: ['gpu:0', 'cpu:0'] }) devices!: string[] | null;
  @ApiProperty({ nullable: true, type: String }) worker_id!: string | null;
  @ApiProperty() attempts!: number;
  @ApiProperty() max_attempts!: number;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({ nullable: true, type: Number }) exit_code!: number | null;
  @ApiProperty({ nullable: true, type: JobProgressDto }) progress!: JobProgressDto | null;
  @ApiProperty() cancel_requested!: boolean;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) started_at!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) finished_at!: string | null;
  @ApiProperty({ format: 'date-time' }) updated_at!: string;

  /** In {@link JOB_PAGE_SCHEMA}'s order. */
  static of(j: JobSummary): JobSummaryDto {
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
}

/** A job with its stored spec (`GET /v1/jobs/:id`, submit, cancel). */
export class JobDto extends JobSummaryDto {
  @ApiProperty({ description: 'The validated spec with every default filled in', type: 'object', additionalProperties: true })
  spec!: Record<string, unknown>;

  static override of(j: JobEntity): JobDto {
    return { ...JobSummaryDto.of(j), spec: redactSpec(j.spec) };
  }
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

export class JobPageDto {
  @ApiProperty({ type: [JobSummaryDto] }) items!: JobSummaryDto[];
  @ApiProperty() page!: number;
  @ApiProperty() limit!: number;
  @ApiProperty() total!: number;
}

const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const orNull = <T extends { type: string }>(s: T) => ({ ...s, type: [s.type, 'null'] });

/**
 * {@link JobPageDto} as a JSON Schema for fast-json-stringify, which writes a job in about two thirds of
 * `JSON.stringify`'s time: the list is the busiest read route. It must name every field of
 * `JobSummaryDto` (the serialiser leaves out what the schema does not name); `jobs.dto.spec.ts`
 * checks it against the DTO's OpenAPI schema and the bytes against `JSON.stringify`.
 */
export const JOB_PAGE_SCHEMA = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: str,
          kind: str,
          name: orNull(str),
          state: str,
          owner_id: str,
          priority: num,
          environment: orNull(str),
          resources: { type: 'object', properties: { gpus: num, cpu_slots: num } },
          devices: { type: ['array', 'null'], items: str },
          worker_id: orNull(str),
          attempts: num,
          max_attempts: num,
          error: orNull(str),
          exit_code: orNull(num),
          progress: { type: ['object', 'null'], properties: { step: num, total: orNull(num), message: orNull(str) } },
          cancel_requested: { type: 'boolean' },
          created_at: str,
          started_at: orNull(str),
          finished_at: orNull(str),
          updated_at: str,
        },
      },
    },
    page: num,
    limit: num,
    total: num,
  },
} as const;

/** One item of a page, as {@link JOB_PAGE_SCHEMA} writes it. */
export const writeJobSummary = fastJson(JOB_PAGE_SCHEMA.properties.items.items as never) as (job: JobSummaryDto) => string;

/** A {@link JobPageDto} from its items' JSON: the bytes `JSON.stringify` writes for the page. */
export function jobPageJson(items: string[], page: number, limit: number, total: number): string {
  return `{"items":[${items.join(',')}],"page":${JSON.stringify(page)},"limit":${JSON.stringify(limit)},"total":${JSON.stringify(total)}}`;
}

export class MetricPointDto {
  @ApiProperty() step!: number;
  @ApiProperty() name!: string;
  @ApiProperty() value!: number;
  @ApiProperty({ format: 'date-time' }) time!: string;

  static of(m: JobMetricEntity): MetricPointDto {
    return { step: m.step, name: m.name, value: m.value, time: iso(m.createdAt)! };
  }
}

export class ArtifactDto {
  @ApiProperty({ example: 'result.json' }) name!: string;
  @ApiProperty() size!: number;
  @ApiProperty({ nullable: true, type: String }) worker_id!: string | null;
  @ApiProperty({ format: 'date-time' }) created_at!: string;

  static of(a: JobArtifactEntity): ArtifactDto {
    return { name: a.name, size: a.size, worker_id: a.workerId, created_at: iso(a.createdAt)! };
  }
}
