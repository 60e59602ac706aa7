import { INFO_NAME_PATTERN, RATED_RESULTS, readStandardInfo, standardInfoProblem, SUMMARISED_INFO_KEYS } from './index';
import type { StepInfo, StepResult } from './index';

describe('standard info fields', () => {
  it('types the standard fields of a step result while any other JSON stays allowed', () => {
    const info: StepInfo = { correct: true, result: 'timeout', winner: null, ground_truth: '4', moves: [1, 2], note: { any: 'json' } };
    const step: StepResult = { observation: '', reward: 1, done: true, info };
    expect(standardInfoProblem(step.info)).toBeNull();
  });

  it('reads what hosts accept and leaves out mistyped fields', () => {
    expect(readStandardInfo({ correct: true, result: 'win', moves: 9 })).toEqual({ correct: 1, result: 'win' });
    expect(readStandardInfo({ correct: false, ground_truth: 12, winner: 'o' })).toEqual({ correct: 0, ground_truth: 12, winner: 'o' });
    expect(readStandardInfo({ correct: 0.25 })).toEqual({ correct: 0.25 });
    expect(readStandardInfo({ correct: 'yes', result: 'a b' })).toEqual({});
    expect(readStandardInfo({ result: 3, correct: null })).toEqual({});
    expect(readStandardInfo({ result: 'x'.repeat(65) })).toEqual({});
    expect(readStandardInfo({ result: null })).toEqual({});
    expect(readStandardInfo(undefined)).toEqual({});
  });

  it('names what is wrong with a standard field, for the conformance kit', () => {
    expect(standardInfoProblem({})).toBeNull();
    expect(standardInfoProblem({ result: null, correct: false })).toBeNull();
    expect(standardInfoProblem({ correct: 1 })).toBe('info.correct must be a boolean, got number');
    expect(standardInfoProblem({ correct: 'true' })).toBe('info.correct must be a boolean, got string');
    expect(standardInfoProblem({ result: ['win'] })).toBe('info.result must be a string or null, got array');
    expect(standardInfoProblem({ result: 'won game' })).toMatch(/^info\.result "won game" must match/);
  });

  it('rates win, loss and draw, and summarises correct and result by name', () => {
    expect(RATED_RESULTS).toEqual(['win', 'loss', 'draw']);
    expect(SUMMARISED_INFO_KEYS).toEqual(['correct', 'result']);
    for (const r of RATED_RESULTS) expect(INFO_NAME_PATTERN.test(r)).toBe(true);
  });
});
