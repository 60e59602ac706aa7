import { dottedPath, tooDeepAt } from './json-depth';

describe('tooDeepAt', () => {
  it('finds the first container past the ceiling, with its path', () => {
    expect(tooDeepAt(JSON.parse('{"a":[[[]]]}'), 3)).toEqual(['a', 0, 0]);
    expect(tooDeepAt(JSON.parse('{"a":[[[]]]}'), 4)).toBeNull();
    expect(tooDeepAt(JSON.parse('{"a":1,"b":[{"c":{}},{"d":{"e":[]}}]}'), 4)).toEqual(['b', 1, 'd', 'e']);
    expect(tooDeepAt([], 0)).toEqual([]);
  });

  it('counts containers only: scalars, strings and null add no depth', () => {
    expect(tooDeepAt(1, 0)).toBeNull();
    expect(tooDeepAt('[[[[[', 0)).toBeNull();
    expect(tooDeepAt({ a: null, b: 'x', c: [1, 2, 3] }, 2)).toBeNull();
  });

  it('walks a value nested a million deep without a stack overflow', () => {
    const deep = JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000));
    expect(tooDeepAt(deep, 64)).toHaveLength(64);
    expect(tooDeepAt(deep, 2_000_000)).toBeNull();
  });

  it('is a dotted field, cut short when the keys are long', () => {
    expect(dottedPath(['environment', 'tasks', 0, 'a'])).toBe('environment.tasks.0.a');
    expect(dottedPath(['k'.repeat(500)])).toHaveLength(201);
  });
});
