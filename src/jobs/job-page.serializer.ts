/**
 * The job list's response body, built without Nest: the list reader thread writes pages with it, so it
 * must not load the DTO classes (and with them Nest, Swagger and class-validator).
 */
import fastJson from 'fast-json-stringify';
import { iso } from '../core/database/columns';
import type { JobSummary } from './job.entity';
import type { JobPageDto, JobSummaryDto } from './jobs.dto';

const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const orNull = <T extends { type: string }>(s: T) => ({ ...s, type: [s.type, 'null'] });

/**
 * `JobPageDto` as a JSON Schema for fast-json-stringify, which writes a page in about two thirds of
 * `JSON.stringify`'s time: the list is the busiest read route. It must name every field of
 * `JobSummaryDto` (the serialiser leaves out what the schema does not name); `job-page.serializer.spec.ts`
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

/** A summary as the API writes it (`JobSummaryDto`'s fields, in the schema's order). */
export function jobSummaryFields(j: JobSummary): JobSummaryDto {
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

const writePage = fastJson(JOB_PAGE_SCHEMA as never) as (page: JobPageDto) => string;
const writeSummary = fastJson(JOB_PAGE_SCHEMA.properties.items.items as never) as (job: JobSummaryDto) => string;

/** The JSON body of `GET /v1/jobs`: byte for byte what `JSON.stringify` writes for the same page. */
export function serializeJobPage(page: { items: readonly JobSummary[]; page: number; limit: number; total: number }): string {
  return writePage({ items: page.items.map(jobSummaryFields), page: page.page, limit: page.limit, total: page.total });
}

/** One item of a page's `items`, as {@link serializeJobPage} writes it. */
export function serializeJobSummary(job: JobSummary): string {
  return writeSummary(jobSummaryFields(job));
}

const ITEMS_OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');

/**
 * A page's body (UTF-8) from its items already written by {@link serializeJobSummary} and encoded: the
 * bytes of {@link serializeJobPage} for the same page (`job-page.serializer.spec.ts` checks it). The
 * items are copied, not re-encoded; the body has an ArrayBuffer of its own, so it can be transferred.
 */
export function joinJobPage(items: readonly Uint8Array[], page: { page: number; limit: number; total: number }): Buffer {
  const close = Buffer.from(`],"page":${page.page},"limit":${page.limit},"total":${page.total}}`);
  const parts = [ITEMS_OPEN, ...items.flatMap((item, i) => (i ? [COMMA, item] : [item])), close];
  const body = Buffer.allocUnsafeSlow(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) at += (body.set(part, at), part.length);
  return body;
}
