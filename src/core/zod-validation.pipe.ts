import type { PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { parseOrThrow } from './zod-error';

/** A request body checked with its zod schema: the schema's output, or 400 `OT_ERR_VALIDATION` naming the field. */
export class ZodBodyPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(private readonly schema: S) {}

  transform(value: unknown): z.output<S> {
    return parseOrThrow(this.schema, value);
  }
}

/** Distinct query strings remembered per route; past that the memory starts over. */
const MAX_QUERIES = 500;

/**
 * A query string checked with its zod schema (numbers coerced, lists split, defaults filled), each
 * distinct query only once per route: a dashboard or a script asks the same `?limit=50` over and over,
 * and the job list is the busiest read route. The remembered output is deep-frozen, so a handler cannot
 * change what the next request gets (an assignment throws). Failed validations are not remembered.
 */
export class ZodQueryPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  private readonly seen = new Map<string, z.output<S>>();

  constructor(private readonly schema: S) {}

  transform(value: unknown): z.output<S> {
    const key = JSON.stringify(value ?? {});
    const known = this.seen.get(key);
    if (known !== undefined) return known;
    const result = deepFreeze(parseOrThrow(this.schema, value ?? {}));
    if (this.seen.size >= MAX_QUERIES) this.seen.clear();
    this.seen.set(key, result);
    return result;
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
