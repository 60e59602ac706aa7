/**
 * Finding the final answer in a model's response. Three conventions exist in the wild:
 * `\boxed{…}` (MATH), `#### 42` (GSM8K) and `Answer: …` lines (DAPO-style); a dataset's
 * `data_source` says which one its prompts asked for, and that one is tried first.
 *
 * {@link readFinalAnswer} is the strict reading the grader uses: besides the final answer it reports
 * why a response cannot be credited whatever the ground truth (it states several different answers,
 * hedges or takes its answer back, or a box never closes). Every function here is total: any string
 * in, a value out, never an exception.
 */
import { EQUATION_DATA_SOURCE } from '../tasks/synthetic';
import { contextProblem, hedges } from './context';
import { isEquivalent } from './equivalence';
import type { EquivalenceOptions } from './equivalence';
import { maskAsides } from './regions';
import { braceMatches, cleanLineAnswer, findStatements } from './statements';
import type { AnswerFormat, Statement, Statements } from './statements';
import { trimLatex } from './text';

export type { AnswerFormat } from './statements';
export { stripMathDelimiters } from './statements';

/** Data sources whose prompts ask for `#### n`. */
const GSM8K_SOURCES = /gsm8k/i;
/** Data sources whose prompts ask for an `Answer: …` line. */
const ANSWER_LINE_SOURCES = /dapo|aime/i;
/** More distinct spellings than this among a response's answers is a list of guesses. */
const MAX_DISTINCT_ANSWERS = 8;

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

/** Why a response's answer cannot be credited, whatever the ground truth. */
export type AnswerProblem =
  /** No answer in any accepted format. */
  | 'no_answer'
  /** A `\boxed{` never closes: the answer cannot be read. */
  | 'unclosed_box'
  /** Two answer statements (boxes, `####` lines, `Answer:` lines) that are not equivalent. */
  | 'several_answers'
  /** The answer is hedged or negated ("either 12 or 13", "not \boxed{12}", "\boxed{12}?"). */
  | 'hedged'
  /** Something after the answer takes it back ("\boxed{12}. That is wrong."). */
  | 'retracted';

/** The outcome of {@link readFinalAnswer}. */
export interface FinalAnswer {
  /** The final answer as written, or null when there is none (`no_answer`, `unclosed_box`). */
  answer: string | null;
  /** Its format, or null. */
  format: AnswerFormat | null;
  /** Why it cannot be credited, or null when it stands to be compared with the ground truth. */
  problem: AnswerProblem | null;
}

export interface ReadOptions extends EquivalenceOptions {
  /** The formats to accept, in order; default {@link answerFormats} of the data source. */
  formats?: AnswerFormat[];
}

/**
 * Reads the final answer of a response, strictly:
 *
 * 1. Thoughts (`<think>…</think>`), fenced and inline code, block quotes and quoted spans that mention
 *    an answer are not part of the answer (`maskAsides`).
 * 2. A `\boxed{` that never closes leaves no answer (`unclosed_box`).
 * 3. The first format of the data source's order that the response uses gives the final answer: its
 *    last statement.
 * 4. Every answer marker in the response — each box, `#### n` and `Answer:` line, in any format — must
 *    be equivalent to the final answer (`several_answers`). "The answer is …" phrases in the
 *    reasoning may differ.
 * 5. The words around the final answer must not hedge, negate or retract it (`hedged`, `retracted`);
 *    after `#### n`, the rest of the line must not hold another number or a hedge.
 *
 * Equation tasks read the first line as the answer and nothing else when there is no box.
 */
export function readFinalAnswer(response: string, dataSource?: string | null, options: ReadOptions = {}): FinalAnswer {
  const none = (problem: AnswerProblem): FinalAnswer => ({ answer: null, format: null, problem });
  if (typeof response !== 'string' || response.length === 0) return none('no_answer');
  const formats = options.formats ?? answerFormats(dataSource);
  const text = maskAsides(response);
  const found = findStatements(text);
  if (found.unclosedBox && formats.includes('boxed')) return none('unclosed_box');

  for (const format of formats) {
    if (format === 'first-line') {
      const line = firstLine(text);
      if (line !== null) return { answer: line, format, problem: null };
      continue;
    }
    const statements = statementsOf(found, format);
    if (statements.length === 0) continue;
    const final = statements[statements.length - 1];
    const markers = formats.flatMap((f) => (f === 'first-line' ? [] : statementsOf(found, f))).filter((s) => !s.prose || s === final);
    const problem = disagreement(markers, final, options) ?? contextOf(text, final);
    return { answer: final.answer, format, problem };
  }
  return none('no_answer');
}

function statementsOf(found: Statements, format: Exclude<AnswerFormat, 'first-line'>): Statement[] {
  return format === 'boxed' ? found.boxed : format === 'hash' ? found.hash : found.answerLine;
}

/** `several_answers` when some marker states another answer than the final one. */
function disagreement(markers: Statement[], final: Statement, options: EquivalenceOptions): AnswerProblem | null {
  const distinct = [...new Set(markers.map((s) => s.answer))];
  if (distinct.length > MAX_DISTINCT_ANSWERS) return 'several_answers';
  const equivalence = { mixedNumbers: options.mixedNumbers, tolerance: options.tolerance };
  for (const answer of distinct) {
    if (answer !== final.answer && !isEquivalent(answer, final.answer, equivalence)) return 'several_answers';
  }
  return null;
}

/** The words around the final statement. */
function contextOf(text: string, final: Statement): AnswerProblem | null {
  if (final.format === 'hash' && final.remark !== undefined) {
    // `#### 72 We double-check.` is a remark; `#### 72 or 73`, `#### 72, 73`, `#### 72 is wrong` are not.
    if (/\d/.test(final.remark) || hedges(final.remark)) return 'hedged';
  }
  return contextProblem(text, final.start, final.end);
}

/**
 * The final answer of a response, following the data source's convention (see {@link answerFormats}),
 * or `null` when the response has none. The answer is returned as written (not normalised). Unlike
 * {@link readFinalAnswer} it does not say whether the answer can be credited.
 *
 * @example
 * ```ts
 * extractAnswer('… so $\\boxed{\\frac{1}{2}}$.');            // '\\frac{1}{2}'
 * extractAnswer('She pays 3 + 4 = 7.\n#### 7', 'openai/gsm8k'); // '7'
 * extractAnswer('Answer: 42');                                // '42'
 * ```
 */
export function extractAnswer(response: string, dataSource?: string | null): string | null {
  return readFinalAnswer(response, dataSource).answer;
}

/**
 * The content of the last `\boxed{…}` (or `\fbox{…}`) whose braces close, nested braces balanced.
 * Lenient, for reading ground-truth solutions: an unclosed last box does not hide an earlier complete
 * one, and `\boxed` inside another box's content is unwrapped (`\boxed{\boxed{5}}` → `5`). Linear time.
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
    const content = trimLatex(text.slice(i + 1, close));
    const inner = depth < 8 && /\\(?:boxed|fbox)(?![A-Za-z])/.test(content) ? lastBoxed(content, depth + 1) : null;
    return inner ?? content;
  }
  return null;
}

/** The response up to its first newline, trimmed (a bare answer such as `432`), or null when blank. */
export function firstLine(text: string): string | null {
  if (typeof text !== 'string') return null;
  const line = text.split('\n', 1)[0].trim();
  return line === '' ? null : line;
}

/** The number after the last `####` (GSM8K), or, for a ground truth, the rest of its line; null when none. */
export function lastHashAnswer(text: string): string | null {
  if (typeof text !== 'string') return null;
  const at = text.lastIndexOf('####');
  if (at < 0) return null;
  const line = text.slice(at + 4).split('\n')[0];
  return cleanLineAnswer(line.replace(/^#+/, '').replace(/^\s*(?:the\s+)?(?:final\s+)?answer\s*(?:is\s*)?[:：]?\s*/i, ''));
}

/**
 * The answer on the last `Answer: …` line (also `Final answer: …`, `**Answer:** …`), or after the last
 * `the answer is …` (also `the final answer is …`); null when neither occurs.
 */
export function lastAnswerLine(text: string): string | null {
  if (typeof text !== 'string') return null;
  const found = findStatements(text);
  const lines = found.answerLine;
  const lastLine = lines.length > 0 ? lines[lines.length - 1] : null;
  // `The answer is $\boxed{5}$`: the box is the answer.
  const lastBox = found.boxed.length > 0 ? found.boxed[found.boxed.length - 1] : null;
  const boxAfterMarker = lastBox !== null && /answer\s*(?:is)?\s*[:：]?\s*(?:\*\*|__)?\s*\$*\s*$/i.test(text.slice(Math.max(0, lastBox.start - 40), lastBox.start));
  if (boxAfterMarker && (!lastLine || lastBox!.start > lastLine.start)) return lastBox!.answer;
  return lastLine ? lastLine.answer : null;
}
