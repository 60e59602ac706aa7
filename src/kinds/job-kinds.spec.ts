import { z } from 'zod';
import { defineJobKind, isJobKind } from './spec/job-kind';
import { API_SCHEMAS } from '../core/openapi-schemas';
import { findJobKind, JOB_KINDS, JobSpecBody, kindList, kindsWith, parseJobSpec, parseStoredSpec } from './job-kinds';

describe('parseJobSpec', () => {
  it('fills every default, including max_attempts by resumability', () => {
    expect(parseJobSpec({ kind: 'sleep' }).spec).toEqual({
      kind: 'sleep',
      priority: 0,
      resources: { gpus: 0, cpu_slots: 1 },
      max_attempts: 3,
      steps: 10,
      step_seconds: 1,
      message: 'tick',
    });
    expect(parseJobSpec({ kind: 'sleep', resources: { gpus: 2 } }).spec.resources).toEqual({ gpus: 2, cpu_slots: 1 });
  });

  it.each([
    [{ kind: 'sleep', extra: 1 }, 'extra'],
    [{ kind: 'sleep', resources: { gpus: 1, ram: 2 } }, 'resources.ram'],
    [{ kind: 'sleep', resources: { gpus: -1 } }, 'resources.gpus'],
    [{ kind: 'sleep', resources: { gpus: 1.5 } }, 'resources.gpus'],
    [{ kind: 'sleep', name: '' }, 'name'],
    [{ kind: 'sleep', max_attempts: 0 }, 'max_attempts'],
    [{ kind: 7 }, 'kind'],
  ])('refuses %j at %s', (body, field) => {
    expect(() => parseJobSpec(body)).toThrow(expect.objectContaining({ code: 'OT_ERR_VALIDATION', field }));
  });

  it('refuses non-objects', () => {
    for (const body of [null, [], 'x', 3]) expect(() => parseJobSpec(body)).toThrow(/JSON object/);
  });

  it('describes the body in OpenAPI as a oneOf of one component per kind, each forbidding unknown keys', () => {
    const body = API_SCHEMAS.schema(JobSpecBody, 'input') as { oneOf: unknown[]; discriminator: { propertyName: string; mapping: Record<string, string> } };
    expect(body.oneOf).toEqual(JOB_KINDS.filter((k) => !k.internal).map((k) => ({ $ref: `#/components/schemas/JobSpec_${k.kind}` })));
    expect(body.discriminator).toEqual({ propertyName: 'kind', mapping: expect.objectContaining({ sleep: '#/components/schemas/JobSpec_sleep' }) });
    const schema = API_SCHEMAS.all().JobSpec_sleep as { additionalProperties: boolean; properties: Record<string, unknown>; required: string[] };
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['kind', 'resources', 'steps', 'priority']));
    // Keys with defaults are optional in what a client sends.
    expect(schema.required).toEqual(['kind']);
  });
});

describe('the job kind registry', () => {
  it('holds branded kinds, each once', () => {
    expect(JOB_KINDS.every(isJobKind)).toBe(true);
    expect(new Set(JOB_KINDS.map((k) => k.kind)).size).toBe(JOB_KINDS.length);
    expect(isJobKind({ kind: 'sleep' })).toBe(false);
  });

  it('refuses an unknown kind, naming the known ones', () => {
    const known = JOB_KINDS.map((k) => k.kind).join(', ');
    expect(known).toMatch(/^sleep, train, inference, session\b/);
    const submittable = JOB_KINDS.filter((k) => !k.internal)
      .map((k) => k.kind)
      .join(', ');
    expect(() => parseJobSpec({ kind: 'nope' })).toThrow(
      expect.objectContaining({ code: 'OT_ERR_VALIDATION', field: 'kind', message: `kind: Unknown job kind nope (known: ${submittable})` }),
    );
    expect(findJobKind('nope')).toBeUndefined();
    expect(() => parseStoredSpec('nope', { kind: 'nope' })).toThrow(`This job runner has no kind nope (known: ${known})`);
  });

  it('takes kinds the server submits itself (tinker) only from the server, never through POST /v1/jobs', () => {
    expect(findJobKind('tinker')?.internal).toBe(true);
    expect(() => parseJobSpec(serverSpecs.tinker)).toThrow(expect.objectContaining({ field: 'kind', message: expect.stringMatching(/^kind: Unknown job kind tinker/) }));
    expect(parseStoredSpec('tinker', serverSpecs.tinker).spec).toMatchObject({ kind: 'tinker', base_model: 'tiny-char' });
  });

  // A kind whose defaults make a whole spec needs no entry here.
  const submitted: Record<string, Record<string, unknown>> = {
    sleep: { kind: 'sleep', steps: 2 },
    train: { kind: 'train', environment: { id: 'math' }, model: { preset: 'tiny-char' }, sft: { steps: 1 } },
    inference: { kind: 'inference', environment: { id: 'math' }, model: { path: 'job:4f0c3a4e-0000-4000-8000-000000000000' } },
    session: { kind: 'session', environment: { id: 'math' }, model: { preset: 'tiny-char', lora: {} } },
  };

  /** Specs of the kinds the server submits itself. */
  const serverSpecs: Record<string, Record<string, unknown>> = {
    tinker: {
      kind: 'tinker',
      session_id: '4f0c3a4e-0000-4000-8000-000000000000',
      base_model: 'tiny-char',
      model: { preset: 'tiny-char' },
      limits: { max_adapters: 2, adapter_memory_mb: 64, samplers_per_model: 2, seq_gap_seconds: 1, max_sample_tokens: 16 },
    },
  };

  it.each(JOB_KINDS.map((k) => [k.kind]))('%s: the runner re-parses the stored spec to the same spec', (name) => {
    const kind = findJobKind(name)!;
    const spec = kind.internal ? kind.parse(serverSpecs[name]) : parseJobSpec(submitted[name] ?? { kind: name }).spec;
    // What the database gives back is JSON, not the parsed object.
    const stored = JSON.parse(JSON.stringify(spec)) as unknown;
    expect(parseStoredSpec(name, stored).spec).toEqual(spec);
  });

  it('refuses a stored spec that no longer fits its schema, naming the field', () => {
    expect(() => parseStoredSpec('sleep', { kind: 'sleep', steps: 2, retired_key: 1 })).toThrow(
      "The stored sleep spec does not fit this server's schema: Unknown field retired_key",
    );
    expect(() => parseStoredSpec('sleep', { kind: 'sleep', steps: 0 })).toThrow(/^The stored sleep spec does not fit this server's schema: steps: /);
  });

  it('answers capability questions from the kinds, not their names', () => {
    const names = (capability: Parameters<typeof kindsWith>[0]) => kindsWith(capability).map((k) => k.kind);
    expect(names('resumable')).toEqual(['sleep', 'train']);
    expect(names('checkpoints')).toEqual(['train', 'session', 'tinker']);
    expect(names('trains')).toEqual(['train', 'session']);
    expect(names('calls')).toEqual(['session']);
    expect(names('results')).toEqual(['inference']);
    expect(findJobKind('inference')?.results).toBe('results.jsonl');
    expect(kindList(kindsWith('checkpoints'))).toBe('train, session and tinker');
    expect(kindList(JOB_KINDS.slice(0, 3))).toBe('sleep, train and inference');
  });

  it('leaves every capability off unless the kind turns it on', async () => {
    const plain = defineJobKind({
      kind: 'plain',
      description: 'A kind with no capability',
      spec: z.object({ text: z.string().default('hi') }),
      runner: async () => async () => undefined,
    });
    expect(plain).toMatchObject({ resumable: false, checkpoints: false, trains: false, calls: false, results: null, callRelay: null, internal: false });
    expect(Object.isFrozen(plain)).toBe(true);
    expect(plain.parse({ kind: 'plain' })).toEqual({ kind: 'plain', priority: 0, resources: { gpus: 0, cpu_slots: 1 }, max_attempts: 1, text: 'hi' });
    expect(() => plain.parse({ kind: 'sleep' })).toThrow(expect.objectContaining({ field: 'kind' }));
    expect(typeof (await plain.runner())).toBe('function');
  });

  it('loads each runner entry only when asked', async () => {
    expect(typeof (await findJobKind('sleep')!.runner())).toBe('function');
  });
});
