import { z } from 'zod';
import { OpenApiSchemas } from './openapi-schemas';

describe('OpenApiSchemas', () => {
  const Progress = z.object({ step: z.number().int(), total: z.number().int().nullable() }).meta({ id: 'TestProgress' });
  const Job = z
    .object({ id: z.uuid(), created_at: z.iso.datetime(), progress: Progress.nullable(), steps: z.array(Progress), note: z.string().optional().describe('A note') })
    .meta({ id: 'TestJob' });

  it('names a schema with an id as a component and refers to it, in the document’s terms', () => {
    const schemas = new OpenApiSchemas();
    expect(schemas.schema(Job, 'output')).toEqual({ $ref: '#/components/schemas/TestJob' });
    expect(schemas.schema(z.array(Job), 'output')).toEqual({ type: 'array', items: { $ref: '#/components/schemas/TestJob' } });
    const components = schemas.all();
    expect(Object.keys(components).sort()).toEqual(['TestJob', 'TestProgress']);
    expect(components.TestJob).toEqual({
      type: 'object',
      properties: {
        // The format says it; the regular expression beside it would only repeat it, unreadably.
        id: { type: 'string', format: 'uuid' },
        created_at: { type: 'string', format: 'date-time' },
        progress: { nullable: true, allOf: [{ $ref: '#/components/schemas/TestProgress' }] },
        steps: { type: 'array', items: { $ref: '#/components/schemas/TestProgress' } },
        note: { type: 'string', description: 'A note' },
      },
      required: ['id', 'created_at', 'progress', 'steps'],
    });
    // int() without bounds of its own says integer, not ±2^53; an answer's object does not forbid keys a later version adds.
    expect(components.TestProgress).toEqual({ type: 'object', properties: { step: { type: 'integer' }, total: { type: 'integer', nullable: true } }, required: ['step', 'total'] });
  });

  it('describes a request as sent and an answer as answered', () => {
    const schemas = new OpenApiSchemas();
    const Query = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size'), kind: z.string().optional() }).strict();
    expect(schemas.schema(Query, 'input')).toEqual({
      type: 'object',
      properties: { limit: { type: 'integer', minimum: 1, maximum: 200, default: 50, description: 'Page size' }, kind: { type: 'string' } },
      additionalProperties: false,
    });
    expect(schemas.queryParameters(Query)).toEqual([
      { name: 'limit', in: 'query', required: false, description: 'Page size', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
      { name: 'kind', in: 'query', required: false, schema: { type: 'string' } },
    ]);
    expect(schemas.schema(Query, 'output')).toMatchObject({ required: ['limit'] });
  });

  it('refuses a component that reads differently as a request and as an answer', () => {
    const schemas = new OpenApiSchemas();
    const Options = z.object({ size: z.number().default(1) }).meta({ id: 'TestOptions' });
    schemas.schema(z.object({ options: Options }), 'input');
    expect(() => schemas.schema(z.object({ options: Options }), 'output')).toThrow('The schema TestOptions reads differently as input and as output');
    // One that reads the same both ways is fine.
    const Same = z.object({ size: z.number() }).meta({ id: 'TestSame' });
    schemas.schema(Same, 'input');
    expect(schemas.schema(Same, 'output')).toEqual({ $ref: '#/components/schemas/TestSame' });
  });

  it('answers a copy, so a caller that edits it changes nothing for the next', () => {
    const schemas = new OpenApiSchemas();
    const Jobs = z.array(Job);
    const first = schemas.schema(Jobs, 'output');
    first.type = 'object';
    expect(schemas.schema(Jobs, 'output').type).toBe('array');
  });
});
