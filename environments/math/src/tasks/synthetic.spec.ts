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

describe("synthetic equations (style: 'equation')", () => {
  const equation = (difficulty: number, index: number, split: 'train' | 'test' = 'train') => generateProblem({ seed: 0, difficulty, split, index, style: 'equation' });

  it.each([1, 2, 3, 4, 5])('difficulty %i: the answer is the equation computed independently', (difficulty) => {
    const maxDigits = Math.min(3, difficulty);
    const ops = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const p = equation(difficulty, i, i % 2 ? 'test' : 'train');
      const m = /^(\d+)([-+*])(\d+)=$/.exec(p.question);
      expect(m).not.toBeNull();
      const [, a, op, b] = m!;
      ops.add(op);
      for (const x of [a, b]) {
        expect(x.length).toBeLessThanOrEqual(maxDigits);
        expect(x === '0' || !x.startsWith('0')).toBe(true);
      }
      const value = op === '+' ? Number(a) + Number(b) : op === '-' ? Number(a) - Number(b) : Number(a) * Number(b);
      expect(p.answer).toBe(String(value));
      expect(value).toBeGreaterThanOrEqual(0);
    }
    expect([...ops].sort()).toEqual(difficulty <= 3 ? ['+'] : difficulty === 4 ? ['+', '-'] : ['*', '+', '-']);
  });

  it('difficulty 3 draws the operand length uniformly, then the operand within it (as the learn bench)', () => {
    const lengths = [0, 0, 0, 0];
    for (let i = 0; i < 3000; i++) for (const x of equation(3, i).question.match(/\d+/g)!) lengths[x.length]++;
    for (const n of [1, 2, 3]) expect(lengths[n] / 6000).toBeGreaterThan(0.3);
  });

  it('serves bare prompts, graded on the first line, never sharing a problem between train and test', () => {
    const tasks = createSyntheticTasks({ difficulty: 3, style: 'equation', seed: 1, test_size: 300 });
    const t = tasks.get('test', 0) as {
      prompt: Array<{ role: string; content: string }>;
      ground_truth: string;
      data_source: string;
      question: string;
      extra_info: Record<string, unknown>;
    };
    expect(t.prompt).toEqual([{ role: 'user', content: t.question }]);
    expect(t.extra_info).toEqual({ split: 'test', index: 0, difficulty: 3, style: 'equation', expression: t.question.slice(0, -1) });
    expect(t.question).toMatch(/^\d+\+\d+=$/);
    expect(t.data_source).toBe('opentinker/synthetic-equation');
    expect(gradeAnswer(`${t.ground_truth}\nand more`, t.ground_truth, t.data_source).correct).toBe(true);
    const test = new Set<string>();
    for (let i = 0; i < 300; i++) test.add((tasks.get('test', i) as { question: string }).question);
    for (let i = 0; i < 20_000; i++) expect(test.has((tasks.get('train', i) as { question: string }).question)).toBe(false);
    // Drawn from the same distribution as train, so the 100 one-digit sums (1 in 9 draws) recur.
    expect(test.size).toBeGreaterThan(250);
  });

  it('leaves the word style as it was', () => {
    const word = createSyntheticTasks({ difficulty: 2 }).get('train', 5);
    expect(createSyntheticTasks({ difficulty: 2, style: 'word' }).get('train', 5)).toEqual(word);
    expect(word).toEqual(
      expect.objectContaining({ data_source: 'opentinker/synthetic-arithmetic', metadata: { difficulty: 2 }, extra_info: { split: 'train', index: 5, difficulty: 2 } }),
    );
  });
});
