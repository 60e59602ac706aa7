import type { JobSummary } from '../jobs/job.entity';
import { JOB_SUMMARY_SERIALIZER_SCHEMA, jobPageJson, JobSummaryDto, jobSummaryDto, REDACTED, redactSpec, writeJobSummary } from './jobs.dto';

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

describe("the job list's serializer", () => {
  it('is generated from JobSummaryDto: every field, in the order jobSummaryDto writes them, with no anyOf to choose between', () => {
    const properties = (JOB_SUMMARY_SERIALIZER_SCHEMA as { properties: Record<string, unknown> }).properties;
    expect(Object.keys(properties)).toEqual(Object.keys(JobSummaryDto.shape));
    expect(Object.keys(properties)).toEqual(Object.keys(jobSummaryDto(summary())));
    expect(JSON.stringify(JOB_SUMMARY_SERIALIZER_SCHEMA)).not.toMatch(/anyOf|oneOf|\$ref|"format"/);
    expect(properties.progress).toMatchObject({ type: 'object', nullable: true });
  });

  it("makes fast-json-stringify (the list route's serialiser) write exactly what JSON.stringify writes", () => {
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
      const dto = { ...page, items: page.items.map(jobSummaryDto) };
      // The list route writes a page from each job's own JSON.
      expect(jobPageJson(dto.items.map(writeJobSummary), page.page, page.limit, page.total)).toBe(JSON.stringify(dto));
    }
  });
});
