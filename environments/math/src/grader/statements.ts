/**
 * Every place a response states a final answer: `\boxed{…}` (MATH), `#### n` (GSM8K), `Answer: …`
 * lines (DAPO), "the answer is …" phrases, and for equations the first line. The strict grader reads
 * all of them, not only the last one, so that a response stating two different answers is caught.
 *
 * Positions refer to the text given, which callers have already passed through `maskAsides` (so
 * statements inside code, quotes and thoughts are not found). Every function is total and linear.
 */
import { trimLatex } from './text';

/** The answer conventions. */
export type AnswerFormat = 'boxed' | 'hash' | 'answer-line' | 'first-line';

/** One statement of an answer. */
export interface Statement {
  format: AnswerFormat;
  /** The answer as written (trimmed; math delimiters and a final period removed for line answers). */
  answer: string;
  /** Where the statement starts (its marker) and ends (after the answer). */
  start: number;
  end: number;
  /**
   * A "the answer is …" phrase: prose, which may be revised later in the reasoning, so it does not
   * have to agree with the final statement. Markers (`\boxed`, `####`, `Answer:`) do.
   */
  prose: boolean;
  /** `####` only: the rest of the line after the number, which must not hedge or list more numbers. */
  remark?: string;
}

/** What a response states, by format, in order of position. */
export interface Statements {
  boxed: Statement[];
  hash: Statement[];
  answerLine: Statement[];
  /** Whether some `\boxed{` never closes (a truncated or malformed answer). */
  unclosedBox: boolean;
}

const BOX = /\\(?:boxed|fbox)(?![A-Za-z])/g;
/** GSM8K's number after `####`: `72`, `-3`, `1,234`, `0.5`, `$18`, `25%`. */
const HASH = /####[ \t]+(?:(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:：]?\s*)?((?:\\?\$\s*)?-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\\?%)?|-?\.\d+)(?!\d|,\d{3})/gi;
/** `Answer: …`, `**Answer:** …`, `Final answer: …`. */
const ANSWER_MARKER = /answer\s*(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?/gi;
/** "the answer is …", "the final answer is: …". */
const ANSWER_PHRASE = /the\s+(?:final\s+)?answer\s+is\s*[:：]?/gi;
/** A `**Final Answer**` heading with the answer on the next line. */
const ANSWER_HEADING = /final\s+answer\s*(?:\*\*|__|#)*[ \t]*\n\s*/gi;

/** Longest line answer read (and `####` remark): beyond it, text is not an answer. */
const MAX_LINE = 1000;

/** All statements of a (masked) response. */
export function findStatements(text: string): Statements {
  const { boxes, unclosed } = findBoxes(text);
  const lineEnd = lineEnds(text);
  return { boxed: boxes, hash: findHashes(text, lineEnd), answerLine: findAnswerLines(text, boxes, lineEnd), unclosedBox: unclosed };
}

/**
 * `lineEnd(i)`: where the line holding position `i` ends, at most {@link MAX_LINE} characters on (a
 * binary search over the newlines, so thousands of markers on one huge line stay linear).
 */
function lineEnds(text: string): (from: number) => number {
  const newlines: number[] = [];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) newlines.push(i);
  return (from) => {
    let lo = 0;
    let hi = newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newlines[mid] < from) lo = mid + 1;
      else hi = mid;
    }
    const end = lo < newlines.length ? newlines[lo] : text.length;
    return Math.min(end, from + MAX_LINE);
  };
}

/** The top-level boxes (a box inside another box is part of it), and whether one never closes. */
function findBoxes(text: string): { boxes: Statement[]; unclosed: boolean } {
  const boxes: Statement[] = [];
  let unclosed = false;
  let matches: Int32Array | null = null;
  let coveredUntil = -1;
  for (const m of text.matchAll(BOX)) {
    const start = m.index ?? 0;
    if (start < coveredUntil) continue;
    let i = start + m[0].length;
    while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
    if (text[i] !== '{') {
      // `\boxed 5`: up to the next space or `$`.
      const bare = /^[^\s$]+/.exec(text.slice(i, i + 200));
      if (bare) boxes.push({ format: 'boxed', answer: bare[0], start, end: i + bare[0].length, prose: false });
      continue;
    }
    matches ??= braceMatches(text);
    const close = matches[i];
    if (close < 0) {
      unclosed = true;
      continue;
    }
    coveredUntil = close + 1;
    const answer = unwrapBoxes(trimLatex(text.slice(i + 1, close)));
    // An empty box (`put the answer in \boxed{}`) states nothing.
    if (answer !== '') boxes.push({ format: 'boxed', answer, start, end: close + 1, prose: false });
  }
  return { boxes, unclosed };
}

/** `\boxed{\boxed{8}}` → `8`: a box whose whole content is a box. */
function unwrapBoxes(content: string): string {
  let s = content;
  for (let guard = 0; guard < 8; guard++) {
    const m = /^\\(?:boxed|fbox)\s*\{/.exec(s);
    if (!m) break;
    const open = m[0].length - 1;
    if (braceMatches(s)[open] !== s.length - 1) break;
    s = trimLatex(s.slice(open + 1, -1));
  }
  return s;
}

/** For each `{`, the index of its matching `}` (or -1); backslash-escaped braces are skipped. */
export function braceMatches(text: string): Int32Array {
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

/** `#### n` statements; a `####` not followed by a space and a number states nothing. */
function findHashes(text: string, lineEnd: (from: number) => number): Statement[] {
  const out: Statement[] = [];
  for (const m of text.matchAll(HASH)) {
    const start = m.index ?? 0;
    const end = start + m[0].length;
    const remark = text.slice(end, lineEnd(end));
    out.push({ format: 'hash', answer: m[1], start, end, prose: false, remark });
  }
  return out;
}

/** `Answer: …` lines, "the answer is …" phrases and `Final Answer` headings whose answer is not a box. */
function findAnswerLines(text: string, boxes: Statement[], lineEnd: (from: number) => number): Statement[] {
  const out: Statement[] = [];
  const patterns: Array<[RegExp, boolean]> = [
    [ANSWER_MARKER, false],
    [ANSWER_PHRASE, true],
    [ANSWER_HEADING, false],
  ];
  for (const [pattern, prose] of patterns) {
    for (const m of text.matchAll(pattern)) {
      const start = m.index ?? 0;
      const from = start + m[0].length;
      const line = text.slice(from, lineEnd(from));
      // `Answer: \boxed{5}`: the box is the statement.
      if (hasBoxIn(boxes, from, from + line.length)) continue;
      const cut = cutSentence(line);
      const answer = cleanLineAnswer(cut);
      if (answer === null) continue;
      out.push({ format: 'answer-line', answer, start, end: from + cut.length, prose });
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/** "5. Next, …" → "5": a line answer stops at the end of its sentence (not at a decimal point). */
function cutSentence(line: string): string {
  const m = /^(.*?[^\d\s])\.\s+\S/.exec(line) ?? /^(.*?\d)\.\s+[A-Za-z]/.exec(line);
  return m ? m[1] : line;
}

/**
 * Strips markdown emphasis, math delimiters, a trailing period and a leading article ("Answer: a 5")
 * from a one-line answer; null when nothing is left.
 */
export function cleanLineAnswer(raw: string): string | null {
  let s = raw.trim();
  s = s
    .replace(/^\*+|\*+$/g, '')
    .replace(/^_+|_+$/g, '')
    .trim();
  s = s.replace(/[.。]+$/, '').trim();
  s = stripMathDelimiters(s);
  s = s.replace(/[.。]+$/, '').trim();
  // "a 5", "an 8": an article, not the variable a times 5.
  s = s.replace(/^(?:a|an)\s+(?=[-\d.$\\])/i, '');
  s = trimLatex(s);
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

/** Whether a box starts in `[from, to)` (boxes are sorted by position). */
function hasBoxIn(boxes: Statement[], from: number, to: number): boolean {
  let lo = 0;
  let hi = boxes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (boxes[mid].start < from) lo = mid + 1;
    else hi = mid;
  }
  return lo < boxes.length && boxes[lo].start < to;
}
