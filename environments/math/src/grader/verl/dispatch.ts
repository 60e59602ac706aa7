/**
 * verl's `default_compute_score` for the math data sources (commit b178a3cd): which ported scorer a
 * data source gets, and the score it returns. Sources verl sends to scorers that need sympy
 * (`numina_*` → prime_math) or to code / QA scorers are not ported: {@link verlScorerFor} returns
 * null for them, as for sources verl does not know (where it raises NotImplementedError).
 */
import { gsm8kScore } from './gsm8k';
import type { Gsm8kMethod } from './gsm8k';
import { mathDapoScore } from './math-dapo';
import { mathRewardScore } from './math-reward';

export type VerlScorer = 'math_reward' | 'gsm8k' | 'math_dapo';

/** The data sources verl scores with `math_reward`. */
export const VERL_MATH_REWARD_SOURCES: readonly string[] = ['lighteval/MATH', 'DigitalLearningGmbH/MATH-lighteval', 'HuggingFaceH4/MATH-500'];
/** The data sources verl scores with `math_dapo` (and every source starting with `aime`). */
export const VERL_MATH_DAPO_SOURCES: readonly string[] = ['math_dapo', 'math', 'math_dapo_reasoning'];

/** The scorer verl's `default_compute_score` uses for a data source, or null when it is not ported. */
export function verlScorerFor(dataSource: string | null | undefined): VerlScorer | null {
  if (typeof dataSource !== 'string') return null;
  if (dataSource === 'openai/gsm8k') return 'gsm8k';
  if (VERL_MATH_REWARD_SOURCES.includes(dataSource)) return 'math_reward';
  if (VERL_MATH_DAPO_SOURCES.includes(dataSource) || dataSource.startsWith('aime')) return 'math_dapo';
  return null;
}

export interface VerlOptions {
  /** gsm8k's `method`: verl's default is `'strict'`. */
  gsm8kMethod?: Gsm8kMethod;
  /** math_dapo's `strict_box_verify`: verl's default is false. */
  strictBoxVerify?: boolean;
}

/** One verl score with what the scorer extracted. */
export interface VerlScore {
  scorer: VerlScorer;
  /** The reward verl uses: math_reward 0/1, gsm8k 0/1 (0 also when nothing was extracted), math_dapo −1/+1. */
  score: number;
  /** Whether the scorer counted the answer correct (score 1). */
  correct: boolean;
  /**
   * What the scorer compared: math_reward's boxed content, gsm8k's extracted number, math_dapo's
   * `pred` (`[INVALID]` when it found no `Answer:` line); null when it found nothing.
   */
  extracted: string | null;
  /** Python's type of the scorer's own return value: gsm8k returns the int `0` when nothing is extracted. */
  pyType: 'int' | 'float';
}

/**
 * The score verl gives `solution` for `groundTruth` under `dataSource`, or null when no ported scorer
 * handles that source. Never throws.
 *
 * @example
 * ```ts
 * verlComputeScore('openai/gsm8k', '… #### 72', '72');            // { scorer: 'gsm8k', score: 1, … }
 * verlComputeScore('math_dapo', 'Answer: 42.', '42')?.score;       // -1 (the period is kept)
 * ```
 */
export function verlComputeScore(dataSource: string, solution: string, groundTruth: string, options: VerlOptions = {}): VerlScore | null {
  const scorer = verlScorerFor(dataSource);
  const text = typeof solution === 'string' ? solution : '';
  switch (scorer) {
    case 'gsm8k': {
      const r = gsm8kScore(text, groundTruth, options.gsm8kMethod ?? 'strict');
      return { scorer, score: r.score, correct: r.score === 1, extracted: r.extracted, pyType: r.pyType };
    }
    case 'math_reward': {
      const r = mathRewardScore(text, groundTruth);
      return { scorer, score: r.score, correct: r.score === 1, extracted: r.answer, pyType: 'float' };
    }
    case 'math_dapo': {
      const r = mathDapoScore(text, groundTruth, { strictBoxVerify: options.strictBoxVerify });
      return { scorer, score: r.score, correct: r.acc, extracted: r.pred, pyType: 'float' };
    }
    default:
      return null;
  }
}
