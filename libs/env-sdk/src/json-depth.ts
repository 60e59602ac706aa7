/**
 * How deep JSON from someone else may nest. Validators (zod), `structuredClone` and most code that walks
 * a value recurse once per level, so a value nested 100,000 deep overflows the stack wherever it goes
 * next. Every JSON a host takes from another party is checked here first, by a walk that keeps its own
 * stack and so works at any depth.
 */

/** Containers (objects and arrays) one JSON value may nest: the default ceiling of the server's bodies and of the clients' answers. */
export const DEFAULT_JSON_MAX_DEPTH = 64;

interface Pending {
  value: unknown;
  depth: number;
  parent: Pending | null;
  key: string | number | null;
}

/**
 * The path (keys and array indices from the top) of the first object or array in `value` that sits
 * deeper than `maxDepth` containers, or null when none does. The top value is at depth 1 when it is an
 * object or array: `[[1]]` has depth 2.
 *
 * @example
 * ```ts
 * tooDeepAt(JSON.parse('{"a":[[[]]]}'), 3); // ['a', 0, 0]
 * ```
 */
export function tooDeepAt(value: unknown, maxDepth: number): Array<string | number> | null {
  const stack: Pending[] = [{ value, depth: 1, parent: null, key: null }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const v = entry.value;
    if (v === null || typeof v !== 'object') continue;
    if (entry.depth > maxDepth) return pathOf(entry);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) if (isContainer(v[i])) stack.push({ value: v[i], depth: entry.depth + 1, parent: entry, key: i });
    } else {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const child = (v as Record<string, unknown>)[keys[i]];
        if (isContainer(child)) stack.push({ value: child, depth: entry.depth + 1, parent: entry, key: keys[i] });
      }
    }
  }
  return null;
}

const isContainer = (v: unknown) => v !== null && typeof v === 'object';

function pathOf(entry: Pending): Array<string | number> {
  const path: Array<string | number> = [];
  for (let e: Pending | null = entry; e && e.key !== null; e = e.parent) path.push(e.key);
  return path.reverse();
}

/** Longest field path an error quotes (a tenant chooses the keys). */
const MAX_FIELD_CHARS = 200;

/** A path as an error's `field`: dotted (`environment.tasks.0.a`), cut short when a tenant's keys make it long. */
export function dottedPath(path: ReadonlyArray<string | number>): string {
  const text = path.join('.');
  return text.length > MAX_FIELD_CHARS ? `${text.slice(0, MAX_FIELD_CHARS)}…` : text;
}
