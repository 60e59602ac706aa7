import { parseJobSpec } from './job-spec-file';

describe('parseJobSpec', () => {
  it('reads JSON and YAML into the same spec', () => {
    const spec = { kind: 'sleep', steps: 3, resources: { cpu_slots: 1 } };
    expect(parseJobSpec(JSON.stringify(spec), 'job.json', 'json')).toEqual(spec);
    expect(parseJobSpec('kind: sleep\nsteps: 3\nresources:\n  cpu_slots: 1\n', 'job.yaml', 'yaml')).toEqual(spec);
    expect(parseJobSpec(JSON.stringify(spec), 'stdin', 'auto')).toEqual(spec);
  });

  it('names the source and the problem, with exit code 2', () => {
    expect(() => parseJobSpec('{"kind": ', 'job.json', 'json')).toThrow(/^job\.json is not valid JSON: /);
    expect(() => parseJobSpec('kind: [sleep', 'job.yaml', 'yaml')).toThrow(/^job\.yaml is not valid YAML or JSON: .*line 1/);
    expect(() => parseJobSpec('- kind: sleep', 'stdin', 'auto')).toThrow('stdin must hold one job spec (an object with "kind"), not a list');
    expect(() => parseJobSpec('  \n', 'job.yaml', 'yaml')).toThrow('job.yaml is empty');
    try {
      parseJobSpec('42', 'job.yaml', 'yaml');
    } catch (error) {
      expect(error).toMatchObject({ exitCode: 2, field: '--config' });
    }
    expect.assertions(5);
  });
});
