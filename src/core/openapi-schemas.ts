import { z } from 'zod';

/** Which side of a schema to describe: a request as it is sent (`input`), a response as it is answered (`output`). */
export type SchemaIo = 'input' | 'output';

export type JsonSchema = { [key: string]: unknown };

const DEFINITIONS = '#/definitions/';
const COMPONENTS = '#/components/schemas/';

/**
 * OpenAPI 3.0 schemas made from zod schemas by `z.toJSONSchema` (target `openapi-3.0`). A schema named
 * with `.meta({ id: 'JobDto' })` becomes the component `JobDto`, referenced with `$ref` wherever it
 * appears, so the document and the typed client keep readable names. Requests are described as clients
 * send them (`input`: a key with a default is optional, a query's `limit` is a number before coercion),
 * responses as the server answers them (`output`).
 *
 * One named schema must describe the same thing on both sides: a component that would differ (a default
 * that makes a key optional in a request and present in a response) is refused when the second use is
 * converted, naming it; such a schema needs two names.
 */
export class OpenApiSchemas {
  private readonly components = new Map<string, { schema: JsonSchema; io: SchemaIo }>();
  private readonly converted = new Map<z.ZodType, Partial<Record<SchemaIo, JsonSchema>>>();

  /** The OpenAPI schema of `schema` (a `$ref` when it is named); the components it names are kept for {@link all}. */
  schema(schema: z.ZodType, io: SchemaIo): JsonSchema {
    let known = this.converted.get(schema);
    if (!known) this.converted.set(schema, (known = {}));
    known[io] ??= this.convert(schema, io);
    return structuredClone(known[io]);
  }

  /** Each key of a query's `z.object` as an OpenAPI query parameter, with its description. */
  queryParameters(schema: z.ZodObject): { name: string; in: 'query'; required: boolean; description?: string; schema: JsonSchema }[] {
    const { properties = {}, required = [] } = this.schema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    return Object.entries(properties).map(([name, { description, ...property }]) => ({
      name,
      in: 'query',
      required: required.includes(name),
      ...(description === undefined ? {} : { description: description as string }),
      schema: property,
    }));
  }

  /** Every component named so far, by name. */
  all(): Record<string, JsonSchema> {
    return Object.fromEntries([...this.components].map(([id, { schema }]) => [id, structuredClone(schema)]));
  }

  private convert(schema: z.ZodType, io: SchemaIo): JsonSchema {
    const { definitions = {}, ...root } = z.toJSONSchema(schema, { target: 'openapi-3.0', io, override: tidy }) as JsonSchema & { definitions?: Record<string, JsonSchema> };
    for (const [id, definition] of Object.entries(definitions)) {
      // Unnamed schemas reached twice on a cycle get made-up names (`__schema0`), which would change with any edit.
      if (id.startsWith('__schema')) throw new Error(`A recursive schema needs a name (.meta({ id })) to be described in OpenAPI: ${JSON.stringify(definition).slice(0, 200)}`);
      const component = components(definition);
      const seen = this.components.get(id);
      if (seen && JSON.stringify(seen.schema) !== JSON.stringify(component)) {
        throw new Error(`The schema ${id} reads differently as ${seen.io} and as ${io}; give the ${io} one its own name`);
      }
      if (!seen) this.components.set(id, { schema: component, io });
    }
    return components(root);
  }
}

/** The schemas of the API's HTTP edge (request bodies, queries, responses), shared by the route decorators and the document. */
export const API_SCHEMAS = new OpenApiSchemas();

/**
 * Takes out what `z.toJSONSchema` adds that says nothing to an API's reader: the ±2^53 bounds of every
 * `int()`, the long regular expression beside a `format` (`uuid`, `date-time`) and, in answers, the
 * `additionalProperties: false` of objects that are not strict (a later version may add keys).
 */
function tidy({ zodSchema, jsonSchema }: { zodSchema: z.core.$ZodType; jsonSchema: JsonSchema }): void {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
  if (jsonSchema.format !== undefined) delete jsonSchema.pattern;
  const def = zodSchema._zod.def as { type: string; catchall?: unknown };
  if (def.type === 'object' && def.catchall === undefined && jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
}

/** References into the document's components, and `{ allOf: [ref] }` (what a wrapper such as a transform leaves) as the plain reference. */
function components(value: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => {
    if (typeof v === 'string' && v.startsWith(DEFINITIONS)) return COMPONENTS + v.slice(DEFINITIONS.length);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      const allOf = (v as { allOf?: JsonSchema[] }).allOf;
      if (keys.length === 1 && allOf?.length === 1 && typeof allOf[0].$ref === 'string' && Object.keys(allOf[0]).length === 1) return allOf[0];
    }
    return v;
  }) as JsonSchema;
}
