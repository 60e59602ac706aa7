import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gsm8kExtractSolution, gsm8kScore } from './gsm8k';
import { mathDapoScore, normalizeFinalAnswer } from './math-dapo';
import { lastBoxedOnlyString, mathRewardScore, removeBoxed, stripString } from './math-reward';
import { verlComputeScore, verlScorerFor } from './dispatch';
import { pyIsDigit, pyLen, pyStrip, pyTail } from './python';

/** The reference cases, scored by verl's own Python scorers (see fixtures/verl-math-grading/README.md). */
const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'fixtures', 'verl-math-grading', 'math-grading.json');
const raw = readFileSync(file, 'utf8');
interface DapoValue {
  score: number;
  acc: boolean;
  pred: string | null;
}
interface Case {
  id: string;
  solution_text: string;
  ground_truth: string;
  primary_scorer: 'math_reward' | 'gsm8k' | 'math_dapo';
  expected_score: number;
  scores_by_scorer: {
    math_reward: number;
    math_dapo: DapoValue;
    'math_dapo[strict_box_verify=True]': DapoValue;
    'gsm8k[strict]': number;
    'gsm8k[flexible]': number;
  };
  intermediates: Record<string, string | null>;
}
const cases: Case[] = JSON.parse(raw).cases;
/** `0` (a Python int) or `0.0`: JSON.parse loses the difference, the file's text keeps it. */
const gsm8kTokens = (method: string) => [...raw.matchAll(new RegExp(`"gsm8k\\[${method}\\]": ([-0-9.]+)`, 'g'))].map((m) => m[1]);
const pyTypeOf = (token: string) => (token.includes('.') ? 'float' : 'int');

describe('the fixture', () => {
  it('has the 86 cases, with both gsm8k columns written as Python printed them', () => {
    expect(cases).toHaveLength(86);
    expect(gsm8kTokens('strict')).toHaveLength(86);
    expect(gsm8kTokens('flexible')).toHaveLength(86);
  });
});

describe.each(cases.map((c, i) => [c.id, c, i] as const))('verl ports on %s', (_id, c, i) => {
  const s = c.scores_by_scorer;

  it('math_reward: score and intermediates', () => {
    expect(mathRewardScore(c.solution_text, c.ground_truth).score).toBe(s.math_reward);
    const im = c.intermediates;
    const boxed = lastBoxedOnlyString(c.solution_text);
    expect(boxed).toBe(im['math_reward.last_boxed_only_string']);
    if ('math_reward.remove_boxed' in im) expect(removeBoxed(boxed!)).toBe(im['math_reward.remove_boxed']);
    if ('math_reward.strip_string(answer)' in im) expect(stripString(removeBoxed(boxed!))).toBe(im['math_reward.strip_string(answer)']);
    expect(stripString(c.ground_truth)).toBe(im['math_reward.strip_string(ground_truth)']);
  });

  it.each(['strict', 'flexible'] as const)('gsm8k[%s]: score, its Python type, and extract_solution', (method) => {
    const r = gsm8kScore(c.solution_text, c.ground_truth, method);
    expect(r.score).toBe(s[`gsm8k[${method}]`]);
    expect(r.pyType).toBe(pyTypeOf(gsm8kTokens(method)[i]));
    expect(gsm8kExtractSolution(c.solution_text, method)).toBe(c.intermediates[`gsm8k.extract_solution[${method}]`]);
  });

  it('math_dapo (Minerva): {score, acc, pred} and normalize_final_answer', () => {
    expect(mathDapoScore(c.solution_text, c.ground_truth)).toEqual(s.math_dapo);
    expect(normalizeFinalAnswer(c.ground_truth)).toBe(c.intermediates['math_dapo.normalize_final_answer(ground_truth)']);
  });

  it('math_dapo[strict_box_verify=True]: {score, acc, pred}', () => {
    expect(mathDapoScore(c.solution_text, c.ground_truth, { strictBoxVerify: true })).toEqual(s['math_dapo[strict_box_verify=True]']);
  });

  it("default_compute_score: the primary scorer's data source gives expected_score", () => {
    const source = { math_reward: 'HuggingFaceH4/MATH-500', gsm8k: 'openai/gsm8k', math_dapo: 'aime2024' }[c.primary_scorer];
    expect(verlComputeScore(source, c.solution_text, c.ground_truth)?.score).toBe(c.expected_score);
  });
});

describe('default_compute_score dispatch', () => {
  it.each([
    ['openai/gsm8k', 'gsm8k'],
    ['lighteval/MATH', 'math_reward'],
    ['DigitalLearningGmbH/MATH-lighteval', 'math_reward'],
    ['HuggingFaceH4/MATH-500', 'math_reward'],
    ['math_dapo', 'math_dapo'],
    ['math', 'math_dapo'],
    ['math_dapo_reasoning', 'math_dapo'],
    ['aime2024', 'math_dapo'],
    ['aime', 'math_dapo'],
    ['numina_olympiads', null],
    ['gsm8k', null],
    ['opentinker/synthetic-arithmetic', null],
    ['AIME2024', null],
  ])('%s → %s', (source, scorer) => {
    expect(verlScorerFor(source)).toBe(scorer);
  });

  it('returns null for sources it does not port, and options reach the scorers', () => {
    expect(verlComputeScore('numina_olympiads', '\\boxed{1}', '1')).toBeNull();
    expect(verlComputeScore('openai/gsm8k', 'The answer is 72', '72')).toMatchObject({ score: 0, pyType: 'int', extracted: null });
    expect(verlComputeScore('openai/gsm8k', 'The answer is 72', '72', { gsm8kMethod: 'flexible' })).toMatchObject({ score: 1, correct: true });
    expect(verlComputeScore('math_dapo', 'so \\boxed{5}', '5', { strictBoxVerify: true })).toMatchObject({ score: 1, extracted: '5' });
    expect(verlComputeScore('math_dapo', 'so \\boxed{5}', '5')).toMatchObject({ score: -1, correct: false, extracted: '[INVALID]' });
  });
});

describe('Python semantics the ports depend on', () => {
  it('index strings by code point', () => {
    expect(pyLen('𝟏𝟐')).toBe(2);
    expect(pyTail('ab𝟏𝟐', 2)).toBe('𝟏𝟐');
    expect(pyTail('ab𝟏𝟐', 3)).toBe('b𝟏𝟐');
    // 299 characters of padding and a 2-unit digit: Python keeps `#### 𝟕`'s digit in the last 300.
    expect(gsm8kExtractSolution(`#### 7${'x'.repeat(294)}`, 'strict')).toBe('7');
    expect(gsm8kExtractSolution(`#### 7${'𝟏'.repeat(295)}`, 'strict')).toBeNull();
  });

  it('str.isdigit() and str.strip() are Unicode-wide', () => {
    expect(['12', '１２', '١٢', '𝟏𝟐', '²', '①'].every(pyIsDigit)).toBe(true);
    expect(['', '1.5', '-1', 'x', '½'].some(pyIsDigit)).toBe(false);
    expect(pyStrip('\u3000 12\u2028\x1c')).toBe('12');
    expect(pyStrip('\ufeff12')).toBe('\ufeff12');
    expect(normalizeFinalAnswer('１,２')).toBe('１２');
  });

  it('keeps the exceptions the originals rely on', () => {
    // strip_string raises on a trailing \sqrt; is_equiv then compares the raw strings.
    expect(mathRewardScore('\\boxed{\\sqrt}', '\\sqrt').score).toBe(1);
    expect(mathRewardScore('\\boxed{2\\sqrt}', '2 \\sqrt').score).toBe(0);
    // \fbox is found but remove_boxed asserts: 0.0.
    expect(mathRewardScore('\\fbox{42}', '42')).toEqual({ score: 0, lastBoxed: '\\fbox{42}', answer: null });
    // Two `\text{ ` units: remove_right_units asserts; raw comparison.
    expect(mathRewardScore('\\boxed{5\\text{ cm}\\text{ x}}', '5').score).toBe(0);
    // int() round trip: only canonical integers become fractions.
    expect(stripString('3/4')).toBe('\\frac{3}{4}');
    expect(stripString('03/4')).toBe('03/4');
    expect(stripString('-0/4')).toBe('-0/4');
    expect(stripString('\\frac1')).toBe('\\frac1');
  });
});

/** Generated responses scored by the same unmodified scorers (fixtures/verl-math-grading/generate-differential.py). */
describe('differential: 500 generated responses', () => {
  const diffFile = join(dirname(file), 'differential.json');
  const generated: Array<Record<string, any>> = JSON.parse(readFileSync(diffFile, 'utf8')).cases;

  it('every scorer gives what verl gave, Python types included', () => {
    const mismatches: unknown[] = [];
    for (const c of generated) {
      const sol: string = c.solution_text;
      const gt: string = c.ground_truth;
      let stripped: unknown;
      try {
        stripped = stripString(gt);
      } catch (e) {
        stripped = { raises: (e as { pyType?: string }).pyType };
      }
      const strict = gsm8kScore(sol, gt, 'strict');
      const flexible = gsm8kScore(sol, gt, 'flexible');
      const got = {
        math_reward: [mathRewardScore(sol, gt).score, 'float'],
        'math_reward.strip_string(ground_truth)': stripped,
        'gsm8k[strict]': [strict.score, strict.pyType],
        'gsm8k[flexible]': [flexible.score, flexible.pyType],
        math_dapo: mathDapoScore(sol, gt),
        'math_dapo[strict_box_verify=True]': mathDapoScore(sol, gt, { strictBoxVerify: true }),
        'math_dapo.normalize_final_answer(solution_text)': normalizeFinalAnswer(sol),
      };
      const want = Object.fromEntries(Object.keys(got).map((k) => [k, c[k]]));
      if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push({ sol, gt, got, want });
    }
    expect(generated).toHaveLength(500);
    expect(mismatches).toEqual([]);
  });
});
