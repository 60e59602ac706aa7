import { z } from 'zod';

/**
 * A zod response schema as a self-contained JSON Schema for fast-json-stringify: every part inline (no
 * `$ref`), `null` allowed by OpenAPI's `nullable` (the serializer reads it; an `anyOf` would make it
 * validate each value to pick a branch), and no `format` or `pattern`, which only change how a string
 * is checked, never how it is written.
 */
export function serializerSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'output',
    // A registry of its own: names and descriptions given with `.meta()` stay out.
    metadata: z.registry(),
    override: ({ jsonSchema }) => {
      delete jsonSchema.format;
      delete jsonSchema.pattern;
    },
  }) as Record<string, unknown>;
}
