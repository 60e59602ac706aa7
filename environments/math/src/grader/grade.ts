/**
 * Grading a response against a ground truth, strictly: read the final answer (and whether it can be
 * credited at all), then compare.
 */
import { isEquivalent } from './equivalence';
import { EQUATION_DATA_SOURCE } from '../tasks/synthetic';
import { lastBoxed, lastHashAnswer, readFinalAnswer } from './extract';
import type { AnswerProblem, ReadOptions } from './extract';

/** A written-out number (`432`, `-7`, `1,024`, `2.5`, `$432$`): what an equation's answer must be. */
const NUMBER_LITERAL = /^\$?\s*-?\d[\d,]*(?:\.\d+)?\s*\$?$/;

/** The grade, with a stable code for why: `correct`, `wrong`, or the answer's problem. */
export type GradeVerdict = 'correct' | 'wrong' | AnswerProblem;

/** The outcome of {@link gradeAnswer}. */
export interface GradeResult {
  /** Whether the final answer is equivalent to the ground truth and stated without a problem. */
  correct: boolean;
  /** The final answer found in the response (as written), or null when there was none. */
  extracted: string | null;
  /**
   * Why: `correct`; `wrong` (an answer that is not the ground truth); `no_answer`; `unclosed_box`;
   * `several_answers` (two answer statements that differ); `hedged` ("either 12 or 13", "\boxed{12}?",
   * "not \boxed{12}"); `retracted` ("\boxed{12}. That is wrong.").
   */
  verdict: GradeVerdict;
}

/** Options of {@link gradeAnswer}: the equivalence knobs, and optionally the accepted answer formats. */
export type GradeOptions = ReadOptions;

/**
 * Grades a response: reads its final answer following the data source's convention
 * (`openai/gsm8k` → `#### n` first, `DigitalLearningGmbH/MATH-lighteval` and others → `\boxed{}` first,
 * DAPO-style → `Answer:` first; the other formats are fallbacks) with the strict rules of
 * `readFinalAnswer`, and compares it with {@link isEquivalent}. A ground truth that is itself a full
 * solution (`… \boxed{5}` or `… #### 5`) is reduced to its answer first. Equation tasks
 * (`opentinker/synthetic-equation`, `47+385=`) need the answer written as a number: an expression
 * equal to it (`47+385`, a copy of the prompt) is wrong. Never throws.
 *
 * @example
 * ```ts
 * gradeAnswer('So the total is $\\boxed{1,000}$.', '1000');     // { correct: true, extracted: '1,000', verdict: 'correct' }
 * gradeAnswer('3 + 4 = 7\n#### 7', '7', 'openai/gsm8k');         // { correct: true, extracted: '7', verdict: 'correct' }
 * gradeAnswer('\\boxed{7} or \\boxed{8}', '8');                   // { correct: false, extracted: '8', verdict: 'several_answers' }
 * gradeAnswer('I am not sure.', '7');                            // { correct: false, extracted: null, verdict: 'no_answer' }
 * gradeAnswer('432\n', '432', 'opentinker/synthetic-equation');  // { correct: true, extracted: '432', verdict: 'correct' }
 * ```
 */
export function gradeAnswer(response: string, groundTruth: string, dataSource?: string, options: GradeOptions = {}): GradeResult {
  try {
    const read = readFinalAnswer(response, dataSource, options);
    const extracted = read.answer;
    if (extracted === null) return { correct: false, extracted: null, verdict: read.problem ?? 'no_answer' };
    if (read.problem !== null) return { correct: false, extracted, verdict: read.problem };
    const truth = groundTruthAnswer(groundTruth);
    if (truth === null) return { correct: false, extracted, verdict: 'wrong' };
    if (dataSource === EQUATION_DATA_SOURCE && !NUMBER_LITERAL.test(extracted)) return { correct: false, extracted, verdict: 'wrong' };
    const correct = isEquivalent(extracted, truth, { mixedNumbers: options.mixedNumbers, tolerance: options.tolerance });
    return { correct, extracted, verdict: correct ? 'correct' : 'wrong' };
  } catch {
    return { correct: false, extracted: null, verdict: 'no_answer' };
  }
}

/**
 * The answer part of a ground truth: itself, or the boxed answer / `#### n` of a full solution.
 * Null for an empty or non-string value.
 */
export function groundTruthAnswer(groundTruth: unknown): string | null {
  if (typeof groundTruth === 'number' && Number.isFinite(groundTruth)) return String(groundTruth);
  if (typeof groundTruth !== 'string') return null;
  const t = groundTruth.trim();
  if (t === '') return null;
  if (t.includes('\\boxed') || t.includes('\\fbox')) return lastBoxed(t) ?? t;
  if (t.includes('####')) return lastHashAnswer(t) ?? t;
  return t;
}
