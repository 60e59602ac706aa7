import { z } from 'zod';
import { AppError, ErrorCode } from '../../core/app-error';
import { zodToAppError } from '../../core/zod-error';
import { JobKind, jobSpecSchema } from './job-kind';
import { inferenceKind } from './inference.kind';
import { sessionKind } from './session.kind';
import { sleepKind } from './sleep.kind';
import { trainKind } from './train.kind';

/** Every kind this server accepts. */
export const JOB_KINDS: readonly JobKind[] = [sleepKind, trainKind, inferenceKind, sessionKind];

const byName = new Map(JOB_KINDS.map((k) => [k.kind, k]));
const schemas = new Map(JOB_KINDS.map((k) => [k.kind, jobSpecSchema(k)]));

export function findJobKind(kind: string): JobKind | undefined {
  return byName.get(kind);
}

/** The kinds whose jobs save checkpoints. */
export const CHECKPOINTING_KINDS: readonly string[] = JOB_KINDS.filter((k) => k.checkpoints).map((k) => k.kind);

export interface ParsedJobSpec {
  kind: JobKind;
  spec: { kind: string; name?: string; priority: number; resources: { gpus: number; cpu_slots: number }; max_attempts: number } & Record<string, unknown>;
}

/** Validates a submitted spec: unknown keys are refused with their path; every default is filled in. */
export function parseJobSpec(body: unknown): ParsedJobSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError(ErrorCode.VALIDATION, 'The job spec must be a JSON object');
  }
  const kindName = (body as { kind?: unknown }).kind;
  if (typeof kindName !== 'string') {
    throw new AppError(ErrorCode.VALIDATION, `kind is required (one of: ${[...byName.keys()].join(', ')})`, { field: 'kind' });
  }
  const kind = byName.get(kindName);
  if (!kind) {
    throw new AppError(ErrorCode.VALIDATION, `Unknown job kind ${kindName} (known: ${[...byName.keys()].join(', ')})`, { field: 'kind' });
  }
  const parsed = schemas.get(kind.kind)!.safeParse(body);
  if (!parsed.success) throw zodToAppError(parsed.error);
  const spec = { ...parsed.data, max_attempts: parsed.data.max_attempts ?? (kind.resumable ? 3 : 1) };
  return { kind, spec: spec as ParsedJobSpec['spec'] };
}

/** JSON Schema of the accepted specs, for the OpenAPI document. */
export function jobSpecJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, schema] of schemas) {
    out[`JobSpec_${name}`] = z.toJSONSchema(schema, { io: 'input', target: 'openapi-3.0' });
  }
  return out;
}
