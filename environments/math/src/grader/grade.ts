/**
 * Grading a response against a ground truth: extract the final answer, then compare.
 */
import { isEquivalent } from './equivalence';
import type { EquivalenceOptions } from './equivalence';
import { EQUATION_DATA_SOURCE } from '../tasks/synthetic';
import { extractAnswer, lastBoxed, lastHashAnswer } from './extract';

/** A written-out number (`432`, `-7`, `1,024`, `2.5`, `$432$`): what an equation's answer must be. */
const NUMBER_LITERAL = /^\$?\s*[-−]?\d[\d,]*(?:\.\d+)?\s*\$?$/;

/** The outcome of {@link gradeAnswer}. */
export interface GradeResult {
  /** Whether the extracted answer is equivalent to the ground truth. */
  correct: boolean;
  /** The final answer found in the response (as written), or null when there was none. */
  extracted: string | null;
}

/**
 * Grades a response: extracts its final answer following the data source's convention
 * (`openai/gsm8k` → `#### n` first, `DigitalLearningGmbH/MATH-lighteval` and others → `\boxed{}` first,
 * DAPO-style → `Answer:` first; the other formats are fallbacks) and compares it with
 * {@link isEquivalent}. A ground truth that is itself a full solution (`… \boxed{5}` or `… #### 5`) is
 * reduced to its answer first. Equation tasks (`opentinker/synthetic-equation`, `47+385=`) need the
 * answer written as a number: an expression equal to it (`47+385`, a copy of the prompt) is wrong.
 * Never throws.
 *
 * @example
 * ```ts
 * gradeAnswer('So the total is $\\boxed{1,000}$.', '1000');            // { correct: true, extracted: '1,000' }
 * gradeAnswer('3 + 4 = 7\n#### 7', '7', 'openai/gsm8k');                // { correct: true, extracted: '7' }
 * gradeAnswer('I am not sure.', '7');                                   // { correct: false, extracted: null }
 * gradeAnswer('432\n', '432', 'opentinker/synthetic-equation');         // { correct: true, extracted: '432' }
 * ```
 */
export function gradeAnswer(response: string, groundTruth: string, dataSource?: string, options?: EquivalenceOptions): GradeResult {
  try {
    const extracted = extractAnswer(response, dataSource);
    if (extracted === null) return { correct: false, extracted: null };
    const truth = groundTruthAnswer(groundTruth);
    if (truth === null) return { correct: false, extracted };
    if (dataSource === EQUATION_DATA_SOURCE && !NUMBER_LITERAL.test(extracted)) return { correct: false, extracted };
    return { correct: isEquivalent(extracted, truth, options), extracted };
  } catch {
    return { correct: false, extracted: null };
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
