import { z } from 'zod';
import { AppError } from '../core/app-error';
import { parseOrThrow } from '../core/zod-error';
import type { AnyJobKind, CommonSpec, JobKindCapabilities } from './spec/job-kind';
import { inferenceKind } from './inference/inference.kind';
import { sessionKind } from './session/session.kind';
import { sleepKind } from './sleep/sleep.kind';
import { tinkerKind } from './tinker/tinker.kind';
import { trainKind } from './train/train.kind';

/**
 * Every kind this server accepts, in the order the API lists them. Nest-free: the API, the worker and
 * the job runner all read kinds from here.
 */
export const JOB_KINDS: readonly AnyJobKind[] = [sleepKind, trainKind, inferenceKind, sessionKind, tinkerKind];

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

/** The kinds `POST /v1/jobs` takes: all but those the server submits itself. */
const SUBMITTABLE = JOB_KINDS.filter((k) => !k.internal);

const known = () => SUBMITTABLE.map((k) => k.kind).join(', ');

/**
 * The body of `POST /v1/jobs`: the spec of one of the kinds, chosen by `kind`; unknown keys are refused
 * with their path and every default is filled in (`max_attempts` by resumability). In OpenAPI, a `oneOf`
 * of the kinds' `JobSpec_<kind>` components.
 */
export const JobSpecBody = z
  .discriminatedUnion(
    'kind',
    // Each option is a kind's parser: its strict schema, then the defaults that depend on the kind.
    SUBMITTABLE.map((k) => k.parser) as unknown as [z.ZodObject, ...z.ZodObject[]],
    {
      error: (issue) => {
        if (issue.code !== 'invalid_union' || issue.path?.[0] !== 'kind') return undefined;
        const kind = (issue.input as { kind?: unknown } | undefined)?.kind;
        return typeof kind === 'string' ? `Unknown job kind ${kind} (known: ${known()})` : `kind is required (one of: ${known()})`;
      },
    },
  )
  // Without a mapping, OpenAPI says a discriminator value is the schema's name (`JobSpec_sleep`), not the kind.
  .meta({ discriminator: { propertyName: 'kind', mapping: Object.fromEntries(SUBMITTABLE.map((k) => [k.kind, `#/components/schemas/JobSpec_${k.kind}`])) } });

/** A spec that {@link JobSpecBody} has parsed, with its kind. */
export function parsedSpec(spec: ParsedJobSpec['spec']): ParsedJobSpec {
  return { kind: byName.get(spec.kind)!, spec };
}

/** Validates a submitted spec as the submit route does (see {@link JobSpecBody}); throws `OT_ERR_VALIDATION` naming the field. */
export function parseJobSpec(body: unknown): ParsedJobSpec {
  return parsedSpec(parseOrThrow(JobSpecBody, body) as ParsedJobSpec['spec']);
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
