import { z } from 'zod';
import { AppError, ErrorCode } from '../../core/app-error';
import type { AnyJobKind, CommonSpec, JobKindCapabilities } from './job-kind';
import { inferenceKind } from './inference/inference.kind';
import { sessionKind } from './session/session.kind';
import { sleepKind } from './sleep/sleep.kind';
import { trainKind } from './train/train.kind';

/**
 * Every kind this server accepts, in the order the API lists them. Nest-free: the API, the worker and
 * the job runner all read kinds from here.
 */
export const JOB_KINDS: readonly AnyJobKind[] = [sleepKind, trainKind, inferenceKind, sessionKind];

const byName = new Map(JOB_KINDS.map((k) => [k.kind, k]));

export function findJobKind(kind: string): AnyJobKind | undefined {
  return byName.get(kind);
}

/** The kinds that have a capability (`checkpoints`, `calls`, a `results` file, …), in registry order. */
export function kindsWith(capability: keyof JobKindCapabilities): AnyJobKind[] {
  return JOB_KINDS.filter((k) => Boolean(k[capability]));
}

/** Kind names for a message: `train`, `train and session`, `a, b and c`. */
export function kindList(kinds: readonly AnyJobKind[]): string {
  const names = kinds.map((k) => k.kind);
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

export interface ParsedJobSpec {
  kind: AnyJobKind;
  spec: CommonSpec & Record<string, unknown>;
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
  return { kind, spec: kind.parse(body) };
}

/**
 * A stored spec, parsed again by its kind's schema where it is run: what the runner gets is what the
 * schema says, with its defaults. A spec stored by a server whose schema differed fails here, naming
 * the field, rather than deep in the run.
 */
export function parseStoredSpec(kindName: string, spec: unknown): ParsedJobSpec {
  const kind = byName.get(kindName);
  if (!kind) throw new Error(`This job runner has no kind ${kindName} (known: ${[...byName.keys()].join(', ')})`);
  try {
    return { kind, spec: kind.parse(spec) };
  } catch (error) {
    if (error instanceof AppError) throw new Error(`The stored ${kindName} spec does not fit this server's schema: ${error.message}`);
    throw error;
  }
}

/** JSON Schema of the accepted specs, for the OpenAPI document. */
export function jobSpecJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kind of JOB_KINDS) {
    out[`JobSpec_${kind.kind}`] = z.toJSONSchema(kind.schema, { io: 'input', target: 'openapi-3.0' });
  }
  return out;
}
