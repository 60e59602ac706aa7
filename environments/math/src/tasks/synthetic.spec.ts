import { gradeAnswer } from '../grader/grade';
import { isEquivalent } from '../grader/equivalence';
import { createSyntheticTasks } from './index';
import { fraction, generateProblem, isTestProblem } from './synthetic';

/** Solves a generated problem from its text by the template's arithmetic (an independent check). */
function solve(q: string): number | null {
  const n = (q.match(/\d+(?:\/\d+)?/g) ?? []).map((x) => (x.includes('/') ? Number(x.split('/')[0]) / Number(x.split('/')[1]) : Number(x)));
  if (/finds \d+ more\. How many/.test(q) && !/shares/.test(q)) return n[0] + n[1];
  if (/on a table and/.test(q)) return n[0] + n[1];
  if (/gives \d+ of them to a friend|takes out/.test(q)) return n[0] - n[1];
  if (/collected/.test(q)) return n[0] + n[1];
  if (/It sold/.test(q)) return n[0] - n[1];
  if (/buys \d+ more and then gives/.test(q)) return n[0] + n[1] - n[2];
  if (/Each \w+ holds/.test(q)) return n[0] * n[1] - n[2];
  if (/shares them equally among/.test(q)) return n[0] / n[1] + n[2];
  if (/already has/.test(q)) return n[0] + n[1] * n[2];
  if (/pays with/.test(q)) return n[2] - n[0] * n[1];
  if (/A train travels/.test(q)) return n[0] * n[1] + n[2] * n[3];
  if (/saves/.test(q)) return n[0] * n[1] - n[2];
  if (/packs of/.test(q)) return (n[0] * n[1] + n[2]) / n[3];
  if (/cup of sugar/.test(q)) return n[0] * n[1];
  if (/litres of juice/.test(q)) return (n[0] / n[1]) * (n[1] - n[2]);
  if (/pages/.test(q)) {
    const [pages, f, g] = n;
    return (pages - pages * f) * (1 - g);
  }
  if (/pizzas/.test(q)) return (n[0] + n[1]) / n[2];
  return null;
}

describe('synthetic arithmetic problems', () => {
  it.each([1, 2, 3, 4, 5])('difficulty %i: 300 problems whose answers match an independent solution', (difficulty) => {
    for (let i = 0; i < 300; i++) {
      const split = i % 2 === 0 ? 'train' : 'test';
      const p = generateProblem({ seed: 7, difficulty, split, index: i });
      const expected = solve(p.question);
      expect(expected).not.toBeNull();
      expect(isEquivalent(p.answer, String(expected))).toBe(true);
      if (difficulty < 5) expect(p.answer).toMatch(/^\d+$/);
      else expect(p.answer).toMatch(/^(?:\d+|\\frac\{\d+\}\{\d+\})$/);
      expect(Number.isFinite(expected!) && expected! >= 0).toBe(true);
    }
  });

  it('level 1 uses one-digit numbers and + or −', () => {
    for (let i = 0; i < 200; i++) {
      const p = generateProblem({ seed: 0, difficulty: 1, split: 'train', index: i });
      for (const x of p.question.match(/\d+/g) ?? []) expect(Number(x)).toBeLessThan(10);
    }
  });

  it('hand-checked examples', () => {
    expect(fraction(9, 2)).toBe('\\frac{9}{2}');
    expect(fraction(6, 3)).toBe('2');
    expect(fraction(4, 6)).toBe('\\frac{2}{3}');
    const p = generateProblem({ seed: 0, difficulty: 1, split: 'train', index: 0 });
    expect(generateProblem({ seed: 0, difficulty: 1, split: 'train', index: 0 })).toEqual(p);
    expect(generateProblem({ seed: 1, difficulty: 1, split: 'train', index: 0 })).not.toEqual(p);
  });

  it('keeps train and test disjoint (by a hash partition of the text) and deterministic', () => {
    const tasks = createSyntheticTasks({ difficulty: 1, seed: 3, test_size: 200 });
    expect(tasks.size('train')).toBeNull();
    expect(tasks.size('test')).toBe(200);
    const test = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const t = tasks.get('test', i) as { question: string };
      expect(isTestProblem(t.question)).toBe(true);
      test.add(t.question);
    }
    for (let i = 0; i < 5000; i++) {
      const t = tasks.get('train', i) as { question: string };
      expect(test.has(t.question)).toBe(false);
      expect(isTestProblem(t.question)).toBe(false);
    }
    expect(test.size).toBeGreaterThan(190);
    expect(JSON.stringify(tasks.get('train', 12345))).toBe(JSON.stringify(createSyntheticTasks({ difficulty: 1, seed: 3 }).get('train', 12345)));
  });

  it('serves tasks in the verl shape, gradable by their own prompt convention', () => {
    const tasks = createSyntheticTasks({ difficulty: 5 });
    const t = tasks.get('test', 4) as { prompt: Array<{ role: string; content: string }>; ground_truth: string; data_source: string; question: string };
    expect(t.prompt).toHaveLength(1);
    expect(t.prompt[0].role).toBe('user');
    expect(t.prompt[0].content).toBe(`${t.question} Let's think step by step and output the final answer within \\boxed{}.`);
    expect(gradeAnswer(`... \\boxed{${t.ground_truth}}`, t.ground_truth, t.data_source).correct).toBe(true);
  });

  it('refuses indexes outside a split with ENV_INVALID_TASK', () => {
    const tasks = createSyntheticTasks({ test_size: 3 });
    expect(() => tasks.get('test', 3)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => tasks.get('train', -1)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => tasks.get('train', 1.5)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
  });
});
