import type { z } from 'zod';
import { AppError, ErrorCode } from './app-error';

/** Turns the first zod issue into a validation error naming the offending path (`resources.gpus`). */
function zodToAppError(error: z.ZodError, prefix = ''): AppError {
  const issue = error.issues[0];
  let path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') path = [...path, issue.keys[0]];
  const field = [prefix, ...path].filter(Boolean).join('.');
  const details = error.issues.map((i) => ({ path: [prefix, ...i.path.map(String)].filter(Boolean).join('.'), message: i.message }));
  if (issue.code === 'invalid_type' && issue.expected === 'object' && path.length === 0) {
    return new AppError(ErrorCode.VALIDATION, `${prefix || 'The body'} must be a JSON object`, { field: prefix || 'body', details });
  }
  const message = issue.code === 'unrecognized_keys' ? `Unknown field ${field}` : `${field || 'body'}: ${issue.message}`;
  return new AppError(ErrorCode.VALIDATION, message, { field: field || undefined, details });
}

/** `schema`'s output for `value`, or `OT_ERR_VALIDATION` naming the first bad field (under `prefix`). */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, prefix);
  return parsed.data;
}
