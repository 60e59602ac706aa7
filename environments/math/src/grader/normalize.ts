/**
 * String-level normalisation of an answer before it is parsed: math delimiters, LaTeX spacing and
 * sizing commands, `\dfrac`/`\tfrac`, known units in `\text{}`/`\mbox{}` or plain words, dollars,
 * degrees and percent signs. Total: never throws.
 *
 * What it does not do, on purpose: read non-ASCII symbols (`−`, `°`, `½`, `π`, fullwidth or
 * Arabic-Indic digits stay as they are, so they match only a ground truth written with the same
 * characters), drop words that are not known units (`12 is wrong` stays text), or join digit groups
 * separated by spaces or spacing commands (`10\,000` is not `10000`; `10\!000` and `10{,}000` are).
 */
import { isPlainUnit, isTextUnit } from './units';
import { stripMathDelimiters } from './statements';
import { trimLatex } from './text';

/** A normalised answer: the text to parse, and whether a percent sign was removed from it. */
export interface Normalized {
  text: string;
  percent: boolean;
}

/** Longest answer that is normalised; longer ones are compared as trimmed strings only. */
export const MAX_ANSWER_LENGTH = 4000;

/** Unicode spaces are spaces; no other non-ASCII character is interpreted. */
const UNICODE_SPACES = /[\u00a0\u2000-\u200b\u202f\u205f\u3000]/g;

/** Units glued to their number (`12cm`, `5kg`): only known units of two letters or more. */
const GLUED_UNIT_RE = /^(-?[\d.,]+)([A-Za-z]{2,}\.?)$/;

/** Words that join answers in a list (`1 and 2`, `3 or 4`). */
const CONNECTIVES = /^(?:and|or|,)$/i;

/**
 * Normalises one answer string. The result is meant for {@link parseValue} / the expression parser,
 * not for display.
 *
 * @example
 * ```ts
 * normalizeAnswer('$\\dfrac{1}{2}\\,\\text{cm}$'); // { text: '\\frac{1}{2}', percent: false }
 * normalizeAnswer('50\\%');                         // { text: '50', percent: true }
 * ```
 */
export function normalizeAnswer(raw: string): Normalized {
  if (typeof raw !== 'string') return { text: '', percent: false };
  let s = trimLatex(raw);
  if (s.length > MAX_ANSWER_LENGTH) return { text: s, percent: false };
  s = stripMathDelimiters(s);
  // A whole answer written as `\boxed{…}`.
  for (let guard = 0; guard < 3 && /^\\(?:boxed|fbox)\s*\{/.test(s); guard++) {
    const open = s.indexOf('{');
    if (matchingBrace(s, open) !== s.length - 1) break;
    s = stripMathDelimiters(s.slice(open + 1, -1));
  }
  s = s.replace(UNICODE_SPACES, ' ');
  s = s.replace(/\\mathbb\s*\{\s*R\s*\}/g, '(-\\infty,\\infty)');
  s = s.replace(/\\(?:displaystyle|textstyle|scriptstyle|limits|nolimits)(?![A-Za-z])/g, '');
  // `\left.` and `\right.` are invisible delimiters.
  s = s.replace(/\\(?:left|right)\s*\./g, '');
  s = s.replace(/\\(?:left|right|[bB]igg?[lrm]?)(?![A-Za-z])/g, '');
  // Thousands separators as MATH writes them: `1,\!000`, `1{,}000`, `10\!000`. A space or a spacing
  // command between digit groups (`10\,000`, `10\;000`, `10 000`) may as well separate two numbers.
  s = s.replace(/(\d),\s*\\!\s*(?=\d{3})/g, '$1,');
  s = s.replace(/(\d)\{,\}(?=\d{3})/g, '$1,');
  s = s.replace(/(\d)\\!(?=\d{3}(?!\d))/g, '$1');
  s = s.replace(/\\(?:hspace|vspace|kern|mkern|hskip)\*?\{[^{}]*\}/g, ' ');
  s = s.replace(/\\(?:quad|qquad|enspace|thinspace|medspace|thickspace|negthinspace|space)(?![A-Za-z])/g, ' ');
  // (`\\` is a matrix row break, not `\` + space.)
  s = s.replace(/(?<!\\)((?:\\\\)*)\\[!,:; ]/g, '$1 ');
  s = s.replace(/~/g, ' ');
  s = s.replace(/\\[dtc]frac(?![A-Za-z])/g, '\\frac');
  s = s.replace(/\\[dt]binom(?![A-Za-z])/g, '\\binom');
  s = s.replace(/\\lbrace(?![A-Za-z])/g, '\\{').replace(/\\rbrace(?![A-Za-z])/g, '\\}');
  s = s.replace(/\\lbrack(?![A-Za-z])/g, '[').replace(/\\rbrack(?![A-Za-z])/g, ']');
  s = s.replace(/\\[lr]?vert(?![A-Za-z])/g, '|').replace(/\\[lr]Vert(?![A-Za-z])/g, '|');
  s = s.replace(/\\(?:leq|leqslant)(?![A-Za-z])/g, '\\le').replace(/\\(?:geq|geqslant)(?![A-Za-z])/g, '\\ge');
  s = s.replace(/\\neq(?![A-Za-z])/g, '\\ne');
  s = s.replace(/\\(?:dots|ldots|cdots)(?![A-Za-z])/g, '\\dots');
  // Repeating decimals: `0.\overline{3}` → `\frac{1}{3}`.
  s = s.replace(/(\d*)\.(\d*)\\overline\{(\d{1,6})\}/g, (_m, int: string, fixed: string, rep: string) => repeating(int, fixed, rep));
  // Plain-text function names and constants: `sqrt(2)`, `sin x`, `2pi`, `inf`.
  s = s.replace(/(?<![A-Za-z\\])(sqrt|sin|cos|tan|arcsin|arccos|arctan|ln|log|exp|pi|infty)(?![A-Za-z])/g, '\\$1');
  s = s.replace(/(?<![A-Za-z\\])(?:infinity|inf)(?![A-Za-z])/g, '\\infty');
  // `1.5 x 10^3` (an x for times before a power of ten).
  s = s.replace(/(\d)\s*[xX]\s*(?=10\s*\^)/g, '$1\\times ');
  s = s.replace(/\\approx(?![A-Za-z])/g, '=');
  // Degrees.
  s = s.replace(/\^\s*\{\s*\\circ\s*\}/g, '').replace(/\^\s*\\circ(?![A-Za-z])/g, '');
  s = s.replace(/\\(?:circ|degree)(?![A-Za-z])/g, '');
  // Dollars.
  s = s.replace(/\\\$/g, '').replace(/\$/g, '');
  // Percent.
  let percent = false;
  if (/\\?%/.test(s)) {
    percent = true;
    s = s.replace(/\\%/g, '').replace(/%/g, '');
  }
  s = unwrapTextCommands(s);
  if (/\\?%/.test(s)) {
    percent = true;
    s = s.replace(/\\%/g, '').replace(/%/g, '');
  }
  s = s.replace(/\s+/g, ' ').trim();
  // `1 and 2`, `x = 2 or x = 3`: lists of answers.
  if (/\d/.test(s)) s = s.replace(/\s+(?:and|or)\s+/g, ', ');
  s = stripPlainUnits(s);
  if (/^-?\d+(?:\.\d+)?\s*(?:percent|per\s*cent)$/i.test(s)) {
    percent = true;
    s = s.replace(/\s*(?:percent|per\s*cent)$/i, '');
  }
  s = s
    .replace(/[.]+$/, '')
    .replace(/^(?:[,;:=]|\.(?!\d))+/, '')
    .trim();
  // "a 5", "an 8": an article, not the variable a times 5.
  s = s.replace(/^(?:a|an)\s+(?=[-\d.])/i, '');
  // `1,000,000` and `12,345.5` are single numbers.
  if (/^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(s)) s = s.replace(/,/g, '');
  return { text: s, percent };
}

const TEXT_COMMANDS = /\\(text|textbf|textit|textrm|textsf|texttt|textnormal|mbox|hbox|mathrm|mathbf|mathit|mathsf|mathtt|mathnormal|operatorname|rm|bf|it)\s*(?=\{)/g;

/**
 * `\text{…}`-like commands: when the answer is only text (`\text{(C)}`, `\text{Monday}`) the text is
 * kept; when there is math beside it, the text is a unit (`5\text{ cm}^2`) and goes, except for
 * connectives (`1 \text{ and } 2` → `1, 2`). `\mathrm{e}`, `\mathbf{v}` (one letter) and
 * `\operatorname{sin}` keep their content as math.
 */
function unwrapTextCommands(input: string): string {
  let s = input;
  const pieces: Array<{ start: number; end: number; name: string; content: string }> = [];
  TEXT_COMMANDS.lastIndex = 0;
  for (const m of s.matchAll(TEXT_COMMANDS)) {
    const open = (m.index ?? 0) + m[0].length;
    const close = matchingBrace(s, open);
    if (close < 0) continue;
    pieces.push({ start: m.index ?? 0, end: close + 1, name: m[1], content: s.slice(open + 1, close) });
  }
  if (pieces.length === 0) return s;
  // Drop nested matches (a piece inside an earlier one).
  const top = pieces.filter((p, i) => !pieces.some((q, j) => j !== i && q.start <= p.start && q.end >= p.end && (q.start !== p.start || q.end !== p.end)));
  let rest = '';
  let last = 0;
  for (const p of top) {
    rest += s.slice(last, p.start);
    last = p.end;
  }
  rest += s.slice(last);
  const restIsMath = /[0-9A-Za-z\\]/.test(rest.replace(/\^\s*(?:\{\s*\d\s*\}|\d)/g, '').replace(/[\s,.;:()=]/g, ''));
  let out = '';
  last = 0;
  for (const p of top) {
    out += s.slice(last, p.start);
    const content = unwrapTextCommands(p.content).trim();
    let end = p.end;
    if (p.name === 'operatorname') out += `\\${content.replace(/^\\+/, '')} `;
    else if (/^(?:math|bf|it|rm)/.test(p.name) && /^[A-Za-z]$/.test(content)) out += content;
    else if (!restIsMath) out += ` ${content} `;
    else if (CONNECTIVES.test(content)) out += ', ';
    else if (isTextUnit(content)) {
      // A unit: drop it together with an exponent (`\text{cm}^2`).
      const exp = /^\s*\^\s*(?:\{\s*\d\s*\}|\d)/.exec(s.slice(end));
      if (exp) end += exp[0].length;
      out += ' ';
    } else out += ` ${content} `; // Not a unit (`\text{not }12`, `\textbf{(C) }12`): the words stay.
    last = end;
  }
  out += s.slice(last);
  s = out;
  return s;
}

/** Index of the `}` closing the `{` at `open`, or -1. */
export function matchingBrace(s: string, open: number): number {
  if (s[open] !== '{') return -1;
  let depth = 0;
  for (let j = open; j < s.length; j++) {
    const c = s[j];
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return j;
    }
  }
  return -1;
}

/**
 * `18 dollars`, `12 square feet`, `3 hrs.`, `12cm`: a number followed by a known unit keeps the number.
 * Other words stay (`12 is wrong`, `72 clips`), so the answer is not the bare number.
 */
function stripPlainUnits(s: string): string {
  const glued = GLUED_UNIT_RE.exec(s);
  if (glued && isPlainUnit(glued[2])) return glued[1];
  const m = /^(-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:\s*\/\s*\d+)?|\\frac\{[^{}]*\}\{[^{}]*\})\s+([A-Za-z][A-Za-z/.\s]*)$/.exec(s);
  if (m && isPlainUnit(m[2])) return m[1];
  return s;
}

/** `int.fixed(rep)(rep)…` as an exact fraction in LaTeX. */
function repeating(int: string, fixed: string, rep: string): string {
  const whole = BigInt(int === '' ? '0' : int);
  const f = fixed.length;
  const r = rep.length;
  // x = int + (fixed·(10^r − 1) + rep) / (10^f · (10^r − 1))
  const den = 10n ** BigInt(f) * (10n ** BigInt(r) - 1n);
  const num = whole * den + BigInt(fixed === '' ? '0' : fixed) * (10n ** BigInt(r) - 1n) + BigInt(rep);
  return `\\frac{${num}}{${den}}`;
}
