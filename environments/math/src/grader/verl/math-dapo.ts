/**
 * A port of verl's `verl/utils/reward_score/math_dapo.py` (commit b178a3cd), verl's scorer for
 * `math_dapo`, `math`, `math_dapo_reasoning` and `aime*`: the last `Answer: …` line of the last 300
 * characters, Minerva's `normalize_final_answer` on both sides, exact equality; +1.0 or −1.0. With
 * `strict_box_verify`, the content of the last `\boxed{}` in the last 100 characters must equal the
 * ground truth as is.
 *
 * Python regexes are translated with their Python meaning: `.` is any code point but `\n`, `\s` is
 * Python's whitespace, `(?i)` folds `ſ` to `s` as Python does (the `u` flag).
 */
import { PY_SPACE, pyIsDigit, pyStrip, pyTail } from './python';

/** What `compute_score` returns: `{score, acc, pred}`. */
export interface MathDapoResult {
  /** +1.0 or −1.0. */
  score: number;
  acc: boolean;
  /** Minerva: the normalised answer (`[INVALID]` when there is no `Answer:` line). Strict box: the box content, or null. */
  pred: string | null;
}

export interface MathDapoOptions {
  strictBoxVerify?: boolean;
}

const SUBSTITUTIONS: ReadonlyArray<readonly [string, string]> = [
  ['an ', ''],
  ['a ', ''],
  ['.$', '$'],
  ['\\$', ''],
  ['\\ ', ''],
  [' ', ''],
  ['mbox', 'text'],
  [',\\text{and}', ','],
  ['\\text{and}', ','],
  ['\\text{m}', '\\text{}'],
];

const REMOVED_EXPRESSIONS: readonly string[] = [
  'square',
  'ways',
  'integers',
  'dollars',
  'mph',
  'inches',
  'hours',
  'km',
  'units',
  '\\ldots',
  'sue',
  'points',
  'feet',
  'minutes',
  'digits',
  'cents',
  'degrees',
  'cm',
  'gm',
  'pounds',
  'meters',
  'meals',
  'edges',
  'students',
  'childrentickets',
  'multiples',
  '\\text{s}',
  '\\text{.}',
  '\\text{\ns}',
  '\\text{}^2',
  '\\text{}^3',
  '\\text{\n}',
  '\\text{}',
  '\\mathrm{th}',
  '^\\circ',
  '^{\\circ}',
  '\\;',
  ',\\!',
  '{,}',
  '"',
  '\\dots',
];

/** `normalize_final_answer(final_answer)`. */
export function normalizeFinalAnswer(finalAnswer: string): string {
  const parts = finalAnswer.split('=');
  let s = parts[parts.length - 1];
  for (const [before, after] of SUBSTITUTIONS) s = s.replaceAll(before, after);
  for (const expr of REMOVED_EXPRESSIONS) s = s.replaceAll(expr, '');
  s = s.replace(/([^\n]*?)(\$)([^\n]*?)(\$)([^\n]*)/gu, (_m, _a, _d1, inner: string) => `$${inner}$`);
  s = s.replace(/(\\text\{)([^\n]*?)(\})/gu, (_m, _a, inner: string) => inner);
  s = s.replace(/(\\textbf\{)([^\n]*?)(\})/gu, (_m, _a, inner: string) => inner);
  s = s.replace(/(\\overline\{)([^\n]*?)(\})/gu, (_m, _a, inner: string) => inner);
  s = s.replace(/(\\boxed\{)([^\n]*)(\})/gu, (_m, _a, inner: string) => inner);
  s = s.replace(/(frac)([^{])([^\n])/gu, (_m, _f, a: string, b: string) => `frac{${a}}{${b}}`);
  s = s.replace(/(sqrt)([^{])/gu, (_m, _f, a: string) => `sqrt{${a}}`);
  s = s.replaceAll('$', '');
  if (pyIsDigit(s.replaceAll(',', ''))) s = s.replaceAll(',', '');
  return pyStrip(s);
}

const ANSWER_PATTERN = new RegExp(`Answer[${PY_SPACE}]*:[${PY_SPACE}]*([^\\n]+)`, 'giu');

/** `is_correct_minerva(solution_str, gt)`: the last `Answer: …` line against the ground truth, both normalised. */
export function isCorrectMinerva(solution: string, groundTruth: string): { correct: boolean; pred: string } {
  let extracted = '[INVALID]';
  for (const m of solution.matchAll(ANSWER_PATTERN)) extracted = m[1];
  const pred = normalizeFinalAnswer(extracted);
  return { correct: pred === normalizeFinalAnswer(groundTruth), pred };
}

/** math_dapo's `last_boxed_only_string`: from the last `\boxed{` to the brace closing it, or null. */
export function dapoLastBoxedOnlyString(s: string): string | null {
  const idx = s.lastIndexOf('\\boxed{');
  if (idx < 0) return null;
  let open = 0;
  for (let i = idx; i < s.length; i++) {
    if (s[i] === '{') open++;
    if (s[i] === '}') {
      open--;
      if (open === 0) return s.slice(idx, i + 1);
    }
  }
  return null;
}

/** `is_correct_strict_box(pred, gt)`: the last box of the last 100 characters, compared as is. */
export function isCorrectStrictBox(solution: string, groundTruth: string): { score: number; pred: string | null } {
  const boxed = dapoLastBoxedOnlyString(pyTail(solution, 100));
  // `remove_boxed` cannot fail here: the string starts with `\boxed{` and ends with `}`.
  const pred = boxed === null ? null : boxed.slice('\\boxed{'.length, -1);
  return { score: pred === groundTruth ? 1 : -1, pred };
}

/** `compute_score(solution_str, ground_truth, strict_box_verify)`. Never throws. */
export function mathDapoScore(solution: string, groundTruth: string, options: MathDapoOptions = {}): MathDapoResult {
  const tail = pyTail(solution, 300);
  let correct: boolean;
  let pred: string | null;
  if (options.strictBoxVerify) {
    const r = isCorrectStrictBox(tail, groundTruth);
    correct = r.score === 1;
    pred = r.pred;
  } else {
    ({ correct, pred } = isCorrectMinerva(tail, groundTruth));
  }
  return { score: correct ? 1 : -1, acc: correct, pred };
}
