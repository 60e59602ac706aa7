import type { z } from 'zod';

/** A message from another process that does not fit its protocol's schema. */
export class IpcMessageError extends Error {}

/**
 * A message that arrived over a Node IPC channel, checked with its protocol's zod schema: the schema's
 * output, or {@link IpcMessageError} naming the sender and the first field at fault (never the value,
 * which may be large or a tenant's). Every process boundary of the server reads messages through this,
 * so what a child sends (a job runner runs plugin code) is input like a request body.
 *
 * @example
 * ```ts
 * child.on('message', (raw) => handle(parseIpcMessage(FromModelServer, raw, 'the model server')));
 * ```
 */
export function parseIpcMessage<S extends z.ZodType>(schema: S, value: unknown, sender: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { issue, path } = deepest(parsed.error.issues[0], []);
  const field = [...path, ...(issue.code === 'unrecognized_keys' ? [issue.keys[0]] : [])].join('.');
  const what = issue.code === 'unrecognized_keys' ? `unknown field ${field}` : `${field || 'message'}: ${issue.message}`;
  throw new IpcMessageError(`${sender} sent a message that does not fit its protocol (${what})`);
}

/**
 * Where a union's value went wrong: of the options, the one that got furthest into the value (its first
 * issue with the longest path), so a result that is nearly a chat result names the field, not "Invalid input".
 */
function deepest(issue: z.core.$ZodIssue, above: PropertyKey[]): { issue: z.core.$ZodIssue; path: string[] } {
  const path = [...above, ...issue.path];
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return { issue, path: path.map(String) };
  const options = issue.errors.filter((o) => o.length > 0).map((o) => o[0]);
  const best = options.reduce((a, b) => (b.path.length > a.path.length ? b : a));
  return deepest(best, path);
}
