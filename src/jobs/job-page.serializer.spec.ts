import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JOB_PAGE_SCHEMA, joinJobPage, jobSummaryFields, serializeJobPage, serializeJobSummary } from './job-page.serializer';
import type { JobSummary } from './job.entity';

type Schema = { type?: string | string[]; nullable?: boolean; properties?: Record<string, Schema>; items?: Schema; $ref?: string; allOf?: Schema[]; enum?: unknown[] };

/** The committed OpenAPI document (the e2e suite checks it against the code). */
const openapi = JSON.parse(readFileSync(join(process.cwd(), 'openapi.json'), 'utf8')) as { components: { schemas: Record<string, Schema> } };

/** Types (with null) and properties, whether written as OpenAPI 3.0 or as JSON Schema. */
function shape(s: Schema): unknown {
  if (s.$ref) return shape(openapi.components.schemas[s.$ref.split('/').pop()!]);
  if (s.allOf) return { ...(shape(s.allOf[0]) as object), type: s.nullable ? ['null', 'object'] : ['object'] };
  const types = [...(Array.isArray(s.type) ? s.type : [s.type!]), ...(s.nullable ? ['null'] : [])].sort();
  return {
    type: types,
    ...(s.properties && { properties: Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, shape(v)])) }),
    ...(s.items && { items: shape(s.items) }),
  };
}

const summary = (over: Partial<JobSummary> = {}): JobSummary => ({
  id: '4f0c8b1e-0000-4000-8000-000000000001', ownerId: '4f0c8b1e-0000-4000-8000-0000000000aa', kind: 'sleep', name: null, state: 'queued',
  priority: 0, environmentId: null, resources: { gpus: 0, cpu_slots: 1 }, devices: null, workerId: null, attempts: 0, maxAttempts: 3,
  error: null, exitCode: null, progress: null, cancelRequestedAt: null, createdAt: 1_764_700_000_000, startedAt: null, finishedAt: null,
  updatedAt: 1_764_700_000_000, ...over,
});

describe('JOB_PAGE_SCHEMA', () => {
  it('describes JobPageDto and JobSummaryDto as the OpenAPI document does, in the order jobSummaryFields writes the fields', () => {
    expect(shape(JOB_PAGE_SCHEMA as unknown as Schema)).toEqual(shape(openapi.components.schemas.JobPageDto));
    expect(Object.keys(JOB_PAGE_SCHEMA.properties.items.items.properties)).toEqual(Object.keys(jobSummaryFields(summary())));
  });

  it('writes exactly what JSON.stringify writes for the page of DTOs', () => {
    const everything = summary({
      name: 'quote " backslash \\ newline \n tab \t unicode é 🚀 lone \ud800 control \u0001',
      state: 'failed', priority: -3, environmentId: 'math', resources: { gpus: 2, cpu_slots: 16 }, devices: ['gpu:0', 'cpu:3'],
      workerId: 'worker-1', attempts: 2, error: 'Error: boom\n    at x (y.js:1:2) "quoted" ' + 'long '.repeat(50), exitCode: 137,
      progress: { step: 7, total: 10, message: 'epoch 1/3 </script>' }, cancelRequestedAt: 1_764_700_000_500,
      startedAt: 1_764_700_000_100, finishedAt: 1_764_700_000_900, updatedAt: 1_764_700_000_900,
    });
    const pages = [
      { items: [], page: 3, limit: 50, total: 0 },
      { items: [summary(), everything, summary({ progress: { step: 1, total: null, message: null }, devices: [] })], page: 1, limit: 2, total: 1_000 },
    ];
    for (const page of pages) {
      const expected = JSON.stringify({ ...page, items: page.items.map(jobSummaryFields) });
      expect(serializeJobPage(page)).toBe(expected);
      // The reader threads' way: items written one by one (and kept), then joined.
      expect(joinJobPage(page.items.map((j) => Buffer.from(serializeJobSummary(j))), page).toString('utf8')).toBe(expected);
    }
  });
});
