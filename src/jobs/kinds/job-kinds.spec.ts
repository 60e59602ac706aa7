import { jobSpecJsonSchemas, parseJobSpec } from './job-kinds';

describe('parseJobSpec', () => {
  it('fills every default, including max_attempts by resumability', () => {
    expect(parseJobSpec({ kind: 'sleep' }).spec).toEqual({
      kind: 'sleep', priority: 0, resources: { gpus: 0, cpu_slots: 1 }, max_attempts: 3, steps: 10, step_seconds: 1, message: 'tick',
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

  it('derives a JSON Schema per kind that forbids unknown keys', () => {
    const schema = jobSpecJsonSchemas().JobSpec_sleep as { additionalProperties: boolean; properties: Record<string, unknown> };
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['kind', 'resources', 'steps', 'priority']));
  });
});
