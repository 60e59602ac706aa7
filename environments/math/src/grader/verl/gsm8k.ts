/**
 * A port of verl's `verl/utils/reward_score/gsm8k.py` (commit b178a3cd), verl's scorer for
 * `openai/gsm8k`: a regex over the last 300 characters, compared with the ground truth as a string.
 */
import { pyTail } from './python';

export type Gsm8kMethod = 'strict' | 'flexible';

/** The score as verl returns it, and the extracted answer. */
export interface Gsm8kResult {
  /**
   * `0` when nothing was extracted (an `int` in Python), else `format_score` (0.0) or `score` (1.0).
   * JavaScript numbers do not tell `0` from `0.0`: {@link Gsm8kResult.pyType} does.
   */
  score: number;
  /** `'int'` for the nothing-extracted `0`, `'float'` otherwise. */
  pyType: 'int' | 'float';
  /** `extract_solution(solution, method)`. */
  extracted: string | null;
}

const CLIP_CHARS = 300;

/**
 * `extract_solution(solution_str, method)`. Strict: the last `#### N` (exactly one space, then
 * `-?[0-9.,]+`) with commas removed. Flexible: the last number-like token that is not `.` (commas
 * kept); when every token is `.`, the first one (the loop variable after a loop without `break`).
 */
export function gsm8kExtractSolution(solution: string, method: Gsm8kMethod = 'strict'): string | null {
  const s = pyTail(solution, CLIP_CHARS);
  if (method === 'strict') {
    const found = [...s.matchAll(/#### (-?[0-9.,]+)/g)];
    if (found.length === 0) return null;
    // The original's `.replace("$", "")` never has a `$` to remove: the pattern cannot match one.
    return found[found.length - 1][1].replaceAll(',', '').replaceAll('$', '');
  }
  const answers = [...s.matchAll(/(-?[0-9.,]+)/g)].map((m) => m[1]);
  if (answers.length === 0) return null;
  for (let i = answers.length - 1; i >= 0; i--) {
    if (answers[i] !== '' && answers[i] !== '.') return answers[i];
  }
  return answers[0];
}

/** `compute_score(solution_str, ground_truth, method, format_score=0.0, score=1.0)`. Never throws. */
export function gsm8kScore(solution: string, groundTruth: string, method: Gsm8kMethod = 'strict'): Gsm8kResult {
  const extracted = gsm8kExtractSolution(solution, method);
  if (extracted === null) return { score: 0, pyType: 'int', extracted };
  return { score: extracted === groundTruth ? 1 : 0, pyType: 'float', extracted };
}
