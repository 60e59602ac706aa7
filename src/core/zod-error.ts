import type { z } from 'zod';
import { AppError, ErrorCode } from './app-error';

/** Turns the first zod issue into a validation error naming the offending path (`resources.gpus`). */
export function zodToAppError(error: z.ZodError, prefix = ''): AppError {
  const issue = error.issues[0];
  let path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') path = [...path, issue.keys[0]];
  const field = [prefix, ...path].filter(Boolean).join('.');
  const message = issue.code === 'unrecognized_keys' ? `Unknown field ${field}` : `${field || 'body'}: ${issue.message}`;
  return new AppError(ErrorCode.VALIDATION, message, {
    field: field || undefined,
    details: error.issues.map((i) => ({ path: [prefix, ...i.path.map(String)].filter(Boolean).join('.'), message: i.message })),
  });
}
