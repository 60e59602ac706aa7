import fastJson from 'fast-json-stringify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JobSummary } from './job.entity';
import { JOB_PAGE_SCHEMA, JobPageDto, jobPageJson, JobSummaryDto, REDACTED, redactSpec, writeJobSummary } from './jobs.dto';

describe('redactSpec', () => {
  it('hides a remote environment token and leaves the stored spec alone', () => {
    const spec = { kind: 'train', environment: { id: 'math', url: 'http://env:8088', token: 's3cret' } };
    const shown = redactSpec(spec);
    expect(shown.environment).toEqual({ id: 'math', url: 'http://env:8088', token: REDACTED });
    expect(JSON.stringify(shown)).not.toContain('s3cret');
    expect(spec.environment.token).toBe('s3cret'); // the runner still gets it
  });

  it('hides a W&B key (trainer.wandb.api_key) and keeps the rest of trainer.wandb', () => {
    const spec = { kind: 'train', trainer: { logger: ['wandb'], wandb: { api_key: 'wb-s3cret', base_url: 'https://wandb.example', entity: 'team' } } };
    expect(redactSpec(spec).trainer).toEqual({ logger: ['wandb'], wandb: { api_key: REDACTED, base_url: 'https://wandb.example', entity: 'team' } });
    expect(spec.trainer.wandb.api_key).toBe('wb-s3cret');
  });

  it('returns specs without a token unchanged', () => {
    const spec = { kind: 'train', environment: { id: 'math' } };
    expect(redactSpec(spec)).toBe(spec);
    const sleep = { kind: 'sleep', steps: 1 };
    expect(redactSpec(sleep)).toBe(sleep);
  });
});

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
  id: '4f0c8b1e-0000-4000-8000-000000000001',
  ownerId: '4f0c8b1e-0000-4000-8000-0000000000aa',
  kind: 'sleep',
  name: null,
  state: 'queued',
  priority: 0,
  environmentId: null,
  resources: { gpus: 0, cpu_slots: 1 },
  devices: null,
  workerId: null,
  attempts: 0,
  maxAttempts: 3,
  error: null,
  exitCode: null,
  progress: null,
  cancelRequestedAt: null,
  createdAt: 1_764_700_000_000,
  startedAt: null,
  finishedAt: null,
  updatedAt: 1_764_700_000_000,
  version: 0,
  ...over,
});

describe('JOB_PAGE_SCHEMA', () => {
  it('describes JobPageDto and JobSummaryDto as the OpenAPI document does, in the order JobSummaryDto.of writes the fields', () => {
    expect(shape(JOB_PAGE_SCHEMA as unknown as Schema)).toEqual(shape(openapi.components.schemas.JobPageDto));
    expect(Object.keys(JOB_PAGE_SCHEMA.properties.items.items.properties)).toEqual(Object.keys(JobSummaryDto.of(summary())));
  });

  it("makes fast-json-stringify (the list route's serialiser) write exactly what JSON.stringify writes", () => {
    const writePage = fastJson(JOB_PAGE_SCHEMA as never) as (page: JobPageDto) => string;
    const everything = summary({
      name: 'quote " backslash \\ newline \n tab \t unicode é 🚀 lone \ud800 control \u0001',
      state: 'failed',
      priority: -3,
      environmentId: 'math',
      resources: { gpus: 2, cpu_slots: 16 },
      devices: ['gpu:0', 'cpu:3'],
      workerId: 'worker-1',
      attempts: 2,
      error: 'Error: boom\n    at x (y.js:1:2) "quoted" ' + 'long '.repeat(50),
      exitCode: 137,
      progress: { step: 7, total: 10, message: 'epoch 1/3 </script>' },
      cancelRequestedAt: 1_764_700_000_500,
      startedAt: 1_764_700_000_100,
      finishedAt: 1_764_700_000_900,
      updatedAt: 1_764_700_000_900,
    });
    const pages = [
      { items: [], page: 3, limit: 50, total: 0 },
      { items: [summary(), everything, summary({ progress: { step: 1, total: null, message: null }, devices: [] })], page: 1, limit: 2, total: 1_000 },
    ];
    for (const page of pages) {
      const dto = { ...page, items: page.items.map(JobSummaryDto.of) };
      expect(writePage(dto)).toBe(JSON.stringify(dto));
      // The list route writes a page from each job's own JSON.
      expect(jobPageJson(dto.items.map(writeJobSummary), page.page, page.limit, page.total)).toBe(JSON.stringify(dto));
    }
  });
});
