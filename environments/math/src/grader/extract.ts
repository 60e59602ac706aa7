/**
 * Finding the final answer in a model's response. Three conventions exist in the wild:
 * `\boxed{…}` (MATH), `#### 42` (GSM8K) and `Answer: …` lines (DAPO-style); a dataset's
 * `data_source` says which one its prompts asked for, and that one is tried first.
 *
 * Every function here is total: any string in, a string or `null` out, never an exception.
 */
import { EQUATION_DATA_SOURCE } from '../tasks/synthetic';

/** Which answer formats to try, in order. */
export type AnswerFormat = 'boxed' | 'hash' | 'answer-line' | 'first-line';

/** Data sources whose prompts ask for `#### n`. */
const GSM8K_SOURCES = /gsm8k/i;
/** Data sources whose prompts ask for an `Answer: …` line. */
const ANSWER_LINE_SOURCES = /dapo|aime/i;

/**
 * The order in which answer formats are tried for a data source: `openai/gsm8k` → `####` first;
 * DAPO-style sources → `Answer:` first; `DigitalLearningGmbH/MATH-lighteval` and everything else →
 * `\boxed{}` first. The other formats remain fallbacks, so a model that answers in another
 * recognised format is still graded on its answer. Equation tasks (`opentinker/synthetic-equation`)
 * take a `\boxed{}` answer or else the response's first line, and nothing else.
 */
export function answerFormats(dataSource?: string | null): AnswerFormat[] {
  const source = typeof dataSource === 'string' ? dataSource : '';
  if (source === EQUATION_DATA_SOURCE) return ['boxed', 'first-line'];
  if (GSM8K_SOURCES.test(source)) return ['hash', 'boxed', 'answer-line'];
  if (ANSWER_LINE_SOURCES.test(source)) return ['answer-line', 'boxed', 'hash'];
  return ['boxed', 'hash', 'answer-line'];
}

/**
 * The final answer of a response, following the data source's convention (see {@link answerFormats}),
 * or `null` when the response has none. The answer is returned as written (not normalised).
 *
 * @example
 * ```ts
 * extractAnswer('… so $\\boxed{\\frac{1}{2}}$.');            // '\\frac{1}{2}'
 * extractAnswer('She pays 3 + 4 = 7.\n#### 7', 'openai/gsm8k'); // '7'
 * extractAnswer('Answer: 42');                                // '42'
 * ```
 */
export function extractAnswer(response: string, dataSource?: string | null): string | null {
  if (typeof response !== 'string' || response.length === 0) return null;
  for (const format of answerFormats(dataSource)) {
    const found =
      format === 'boxed'
        ? lastBoxed(response)
        : format === 'hash'
          ? lastHashAnswer(response)
          : format === 'answer-line'
            ? lastAnswerLine(response)
            : firstLine(response);
    if (found !== null && found.trim() !== '') return found.trim();
  }
  return null;
}

/**
 * The content of the last `\boxed{…}` (or `\fbox{…}`) whose braces close, nested braces balanced.
 * Unlike the SDK's `extractBoxed`, an unclosed last box does not hide an earlier complete one, and
 * `\boxed` inside another box's content is unwrapped (`\boxed{\boxed{5}}` → `5`). Linear time.
 */
export function lastBoxed(text: string, depth = 0): string | null {
  if (typeof text !== 'string') return null;
  const starts: number[] = [];
  for (const m of text.matchAll(/\\(?:boxed|fbox)(?![A-Za-z])/g)) starts.push((m.index ?? 0) + m[0].length);
  if (starts.length === 0) return null;
  let matches: Int32Array | null = null;
  for (let k = starts.length - 1; k >= 0; k--) {
    let i = starts[k];
    while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
    if (text[i] !== '{') {
      // `\boxed 5`: up to the next space or `$`.
      const m = /^[^\s$]+/.exec(text.slice(i, i + 200));
      if (m) return m[0];
      continue;
    }
    matches ??= braceMatches(text);
    const close = matches[i];
    if (close < 0) continue;
    const content = text.slice(i + 1, close).trim();
    const inner = depth < 8 && /\\(?:boxed|fbox)(?![A-Za-z])/.test(content) ? lastBoxed(content, depth + 1) : null;
    return inner ?? content;
  }
  return null;
}

/** For each `{`, the index of its matching `}` (or -1); backslash-escaped braces are skipped. */
function braceMatches(text: string): Int32Array {
  const out = new Int32Array(text.length).fill(-1);
  const stack: number[] = [];
  for (let j = 0; j < text.length; j++) {
    const c = text[j];
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === '{') stack.push(j);
    else if (c === '}' && stack.length > 0) out[stack.pop()!] = j;
  }
  return out;
}

/** The response up to its first newline, trimmed (a bare answer such as `432`), or null when blank. */
export function firstLine(text: string): string | null {
  if (typeof text !== 'string') return null;
  const line = text.split('\n', 1)[0].trim();
  return line === '' ? null : line;
}

/** The rest of the line after the last `####` (GSM8K), or null. */
export function lastHashAnswer(text: string): string | null {
  if (typeof text !== 'string') return null;
  const at = text.lastIndexOf('####');
  if (at < 0) return null;
  const line = text.slice(at + 4).split('\n')[0];
  return cleanLineAnswer(line.replace(/^#+/, ''));
}

/**
 * The answer on the last `Answer: …` line (also `Final answer: …`, `**Answer:** …`), or after the last
 * `the answer is …` (also `the final answer is …`); null when neither occurs.
 */
export function lastAnswerLine(text: string): string | null {
  if (typeof text !== 'string') return null;
  const patterns = [
    /answer\s*(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?/gi,
    /the\s+(?:final\s+)?answer\s+is\s*[:：]?/gi,
    // A `**Final Answer**` heading with the answer on the next line.
    /final\s+answer\s*(?:\*\*|__|#)*[ \t]*\n\s*/gi,
  ];
  let best: { at: number; rest: string } | null = null;
  for (const pattern of patterns) {
    for (const m of text.matchAll(pattern)) {
      const at = m.index ?? 0;
      if (!best || at > best.at) best = { at, rest: text.slice(at + m[0].length) };
    }
  }
  if (!best) return null;
  let line = best.rest.split('\n')[0];
  // `The answer is $\boxed{5}$` — the box is the answer.
  const boxed = lastBoxed(line);
  if (boxed !== null) return boxed;
  line = line.trim();
  // "The answer is 5. Next, …": stop at a sentence end (a period followed by a space and more text).
  const sentence = /^(.*?[^\d\s])\.\s+\S/.exec(line) ?? /^(.*?\d)\.\s+[A-Za-z]/.exec(line);
  if (sentence) line = sentence[1];
  return cleanLineAnswer(line);
}

/** Strips markdown emphasis, math delimiters and a trailing period from a one-line answer. */
function cleanLineAnswer(raw: string): string | null {
  let s = raw.trim();
  s = s.replace(/^\*+|\*+$/g, '').replace(/^_+|_+$/g, '').trim();
  // `#### The answer is 12`
  s = s.replace(/^(?:the\s+)?(?:final\s+)?answer\s*(?:is\s*)?[:：]?\s*/i, '');
  s = s.replace(/[.。]+$/, '').trim();
  s = stripMathDelimiters(s);
  s = s.replace(/[.。]+$/, '').trim();
  return s === '' ? null : s;
}

/** `$…$`, `$$…$$`, `\(…\)`, `\[…\]` around the whole string are removed. */
export function stripMathDelimiters(value: string): string {
  let s = value.trim();
  for (let guard = 0; guard < 4; guard++) {
    const before = s;
    if (s.startsWith('$$') && s.endsWith('$$') && s.length >= 4) s = s.slice(2, -2).trim();
    else if (s.startsWith('$') && s.endsWith('$') && s.length >= 2 && !s.slice(1, -1).includes('$')) s = s.slice(1, -1).trim();
    else if (s.startsWith('\\(') && s.endsWith('\\)')) s = s.slice(2, -2).trim();
    else if (s.startsWith('\\[') && s.endsWith('\\]')) s = s.slice(2, -2).trim();
    if (s === before) break;
  }
  return s;
}
