/**
 * A line-by-line port of verl's `verl/utils/reward_score/math_reward.py` (commit b178a3cd; itself
 * lm-evaluation-harness's Hendrycks-MATH normalisation): the last `\boxed{}` of the response,
 * `strip_string` on both sides, exact string equality. verl scores `lighteval/MATH`,
 * `DigitalLearningGmbH/MATH-lighteval` and `HuggingFaceH4/MATH-500` with it.
 *
 * Python's exceptions are kept as {@link PyError}s where the original raises them, because the
 * original's `try/except` blocks decide the score from them (`is_equiv` falls back to comparing the
 * raw strings; `compute_score` returns 0.0).
 */
import { codePoints, pyLen, PyError } from './python';

/** The score and what the scorer looked at. */
export interface MathRewardResult {
  /** 0.0 or 1.0 (a float in Python). */
  score: number;
  /** `last_boxed_only_string(solution)`. */
  lastBoxed: string | null;
  /** `remove_boxed(last boxed)`, or null when there was no box or remove_boxed raised. */
  answer: string | null;
}

/** `compute_score(solution_str, ground_truth)`. Never throws. */
export function mathRewardScore(solution: string, groundTruth: string): MathRewardResult {
  let lastBoxed: string | null = null;
  let answer: string | null = null;
  try {
    lastBoxed = lastBoxedOnlyString(solution);
    if (lastBoxed !== null) {
      answer = removeBoxed(lastBoxed);
      if (isEquiv(answer, groundTruth)) return { score: 1, lastBoxed, answer };
    }
  } catch {
    // The original prints the exception and scores 0.0.
  }
  return { score: 0, lastBoxed, answer };
}

/** `is_equiv(str1, str2)`: equal after `strip_string`, or as raw strings when stripping raises. */
export function isEquiv(a: string | null, b: string | null): boolean {
  if (a === null && b === null) return true;
  if (a === null || b === null) return false;
  try {
    return stripString(a) === stripString(b);
  } catch {
    return a === b;
  }
}

/** `remove_boxed(s)`: throws AssertionError unless `s` is `\boxed …` or `\boxed{…}`. */
export function removeBoxed(s: string): string {
  if (s.includes('\\boxed ')) {
    const left = '\\boxed ';
    if (!s.startsWith(left)) throw new PyError('AssertionError', 'remove_boxed');
    return s.slice(left.length);
  }
  const left = '\\boxed{';
  if (!s.startsWith(left)) throw new PyError('AssertionError', 'remove_boxed');
  if (!s.endsWith('}')) throw new PyError('AssertionError', 'remove_boxed');
  return s.slice(left.length, -1);
}

/**
 * `last_boxed_only_string(string)`: `\boxed <rest up to $>` when the text has `\boxed ` anywhere;
 * else from the last `\boxed` (or, with none, the last `\fbox`) to the `}` that brings the brace count
 * back to zero; null when there is none or it never closes.
 */
export function lastBoxedOnlyString(s: string): string | null {
  let idx = s.lastIndexOf('\\boxed');
  if (s.includes('\\boxed ')) {
    const parts = s.split('\\boxed ');
    return `\\boxed ${parts[parts.length - 1].split('$')[0]}`;
  }
  if (idx < 0) {
    idx = s.lastIndexOf('\\fbox');
    if (idx < 0) return null;
  }
  let open = 0;
  for (let i = idx; i < s.length; i++) {
    const c = s[i];
    if (c === '{') open++;
    if (c === '}') {
      open--;
      if (open === 0) return s.slice(idx, i + 1);
    }
  }
  return null;
}

/** `fix_fracs`: `\frac12` → `\frac{1}{2}`, `\frac1{72}` → `\frac{1}{72}`; raises on `\frac` at the end. */
export function fixFracs(s: string): string {
  const substrs = s.split('\\frac');
  let out = substrs[0];
  for (const part of substrs.slice(1)) {
    out += '\\frac';
    const cps = codePoints(part);
    if (cps.length === 0) throw new PyError('IndexError', 'string index out of range');
    if (cps[0] === '{') {
      out += part;
      continue;
    }
    // The original wraps only this length check in try/except: a one-character tail returns the input.
    if (cps.length < 2) return s;
    const [a, b] = cps;
    const post = cps.slice(2).join('');
    out += b !== '{' ? `{${a}}{${b}}${post}` : `{${a}}${b}${post}`;
  }
  return out;
}

/** `fix_a_slash_b`: `3/4` → `\frac{3}{4}` when both sides are integers written as Python prints them. */
export function fixASlashB(s: string): string {
  const parts = s.split('/');
  if (parts.length !== 2) return s;
  // int() then `assert string == f"{a}/{b}"`: only canonical ASCII integers survive the round trip, and
  // Python 3.11 refuses int() of more than 4300 digits (ValueError, caught: the input is returned).
  const canonical = (x: string) => /^(?:0|-?[1-9]\d*)$/.test(x) && x.replace('-', '').length <= 4300;
  if (!canonical(parts[0]) || !canonical(parts[1])) return s;
  return `\\frac{${parts[0]}}{${parts[1]}}`;
}

/** `remove_right_units`: drops `\text{ …}` and what follows; raises when it occurs twice. */
export function removeRightUnits(s: string): string {
  if (!s.includes('\\text{ ')) return s;
  const splits = s.split('\\text{ ');
  if (splits.length !== 2) throw new PyError('AssertionError', 'remove_right_units');
  return splits[0];
}

/** `fix_sqrt`: `\sqrt3` → `\sqrt{3}`; raises on `\sqrt` at the end. */
export function fixSqrt(s: string): string {
  if (!s.includes('\\sqrt')) return s;
  const splits = s.split('\\sqrt');
  let out = splits[0];
  for (const split of splits.slice(1)) {
    const cps = codePoints(split);
    if (cps.length === 0) throw new PyError('IndexError', 'string index out of range');
    out += cps[0] !== '{' ? `\\sqrt{${cps[0]}}${cps.slice(1).join('')}` : `\\sqrt${split}`;
  }
  return out;
}

/** `strip_string`: the Hendrycks-MATH normalisation, step by step as in the original. May throw {@link PyError}. */
export function stripString(input: string): string {
  let s = input.replaceAll('\n', '');
  s = s.replaceAll('\\!', '');
  s = s.replaceAll('\\\\', '\\');
  s = s.replaceAll('tfrac', 'frac');
  s = s.replaceAll('dfrac', 'frac');
  s = s.replaceAll('\\left', '');
  s = s.replaceAll('\\right', '');
  s = s.replaceAll('^{\\circ}', '');
  s = s.replaceAll('^\\circ', '');
  s = s.replaceAll('\\$', '');
  s = removeRightUnits(s);
  s = s.replaceAll('\\\\%', '');
  s = s.replaceAll('\\%', '');
  s = s.replaceAll(' .', ' 0.');
  s = s.replaceAll('{.', '{0.');
  if (s.length === 0) return s;
  if (s[0] === '.') s = `0${s}`;
  const eq = s.split('=');
  if (eq.length === 2 && pyLen(eq[0]) <= 2) s = eq[1];
  s = fixSqrt(s);
  s = s.replaceAll(' ', '');
  s = fixFracs(s);
  if (s === '0.5') s = '\\frac{1}{2}';
  s = fixASlashB(s);
  return s;
}
