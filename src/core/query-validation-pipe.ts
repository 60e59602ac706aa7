import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';

/** Distinct query strings remembered per query class; past that the memory starts over. */
const MAX_QUERIES_PER_CLASS = 500;

/**
 * The global ValidationPipe, validating each distinct query string of a query class only once: a
 * dashboard or a script asks the same `?limit=50` over and over, and class-transformer plus
 * class-validator took ~18 µs for it (4 % of a job listing). The remembered instance is deep-frozen, so
 * a handler cannot change what the next request gets (an assignment throws). Bodies, path parameters
 * and failed validations are not remembered.
 */
export class QueryValidationPipe extends ValidationPipe {
  private readonly queries = new WeakMap<object, Map<string, unknown>>();

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype;
    if (metadata.type !== 'query' || metadata.data !== undefined || !metatype || !this.toValidate(metadata)) return super.transform(value, metadata);
    let seen = this.queries.get(metatype);
    if (!seen) this.queries.set(metatype, (seen = new Map()));
    const key = JSON.stringify(value);
    const known = seen.get(key);
    if (known !== undefined) return known;
    const result = deepFreeze(await super.transform(value, metadata));
    if (seen.size >= MAX_QUERIES_PER_CLASS) seen.clear();
    seen.set(key, result);
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
