import { REDACTED, redactSpec } from './jobs.dto';

describe('redactSpec', () => {
  it('hides a remote environment token and leaves the stored spec alone', () => {
    const spec = { kind: 'train', environment: { id: 'math', url: 'http://env:8088', token: 's3cret' } };
    const shown = redactSpec(spec);
    expect(shown.environment).toEqual({ id: 'math', url: 'http://env:8088', token: REDACTED });
    expect(JSON.stringify(shown)).not.toContain('s3cret');
    expect(spec.environment.token).toBe('s3cret'); // the runner still gets it
  });

  it('returns specs without a token unchanged', () => {
    const spec = { kind: 'train', environment: { id: 'math' } };
    expect(redactSpec(spec)).toBe(spec);
    const sleep = { kind: 'sleep', steps: 1 };
    expect(redactSpec(sleep)).toBe(sleep);
  });
});
