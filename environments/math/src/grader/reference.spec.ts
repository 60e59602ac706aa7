import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gradeAnswer } from './grade';

/**
 * The strict grader against the reference graders (fixtures/verl-math-grading): wherever verl's
 * math_reward, prime_math and Math-Verify give the same verdict, the strict grader must give it too.
 * Each case is graded under the data source of the scorer whose convention it follows.
 */
const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'verl-math-grading', 'math-grading.json');
interface Case {
  id: string;
  primary_scorer: 'math_reward' | 'gsm8k' | 'math_dapo';
  solution_text: string;
  ground_truth: string;
  scores_by_scorer: { math_reward: number; prime_math: [boolean, boolean, string]; math_verify: number };
}
const cases: Case[] = JSON.parse(readFileSync(file, 'utf8')).cases;
const SOURCE = { math_reward: 'DigitalLearningGmbH/MATH-lighteval', gsm8k: 'openai/gsm8k', math_dapo: 'math_dapo' } as const;

const verdicts = (c: Case) => [c.scores_by_scorer.math_reward, c.scores_by_scorer.prime_math[0] ? 1 : 0, c.scores_by_scorer.math_verify];
const agreed = cases.filter((c) => new Set(verdicts(c)).size === 1);

describe('strict grader vs the reference graders', () => {
  it('the three agree on 40 of the 86 cases', () => {
    expect(agreed).toHaveLength(40);
  });

  it.each(agreed.map((c) => [c.id, JSON.stringify(c.solution_text).slice(0, 60), verdicts(c)[0], c] as const))('%s %s → %i', (_id, _text, expected, c) => {
    expect(gradeAnswer(c.solution_text, c.ground_truth, SOURCE[c.primary_scorer]).correct).toBe(expected === 1);
  });
});
