/**
 * The parts of a response that are not the response's own statement of its answer: thoughts, code,
 * and quotations. An answer written there is a mention (a code example, a quoted instruction, a step of
 * thinking), not an answer, so {@link maskAsides} blanks them out before answers are looked for.
 */

/** Blanks a span, keeping its length and line breaks (so positions in the text stay valid). */
const blank = (span: string) => span.replace(/[^\n]/g, ' ');

/** Inline code on one line: `` `…` `` or ``` ``…`` ```. */
const INLINE_CODE = /(``?)(?!`)[^`\n]+?\1(?!`)/g;
/** Markdown block quotes: lines starting with `>`. */
const BLOCK_QUOTE = /^[ \t]*>[^\n]*/gm;
/** A quoted span on one line ("…", “…”) that mentions an answer marker. */
const QUOTED = /"[^"\n]*"|\u201c[^\u201d\n]*\u201d/g;
const MARKER = /\\(?:boxed|fbox)|####|answer/i;

/**
 * The thought part of a response: everything up to the last `</think>` (the model's reasoning, also
 * when the chat template opened `<think>` in the prompt), and everything after a `<think>` that never
 * closes. `<thinking>` counts the same. Returns `[start, end)` ranges.
 */
export function thoughtRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const close = /<\/think(?:ing)?>/gi;
  let lastClose = -1;
  for (const m of text.matchAll(close)) lastClose = (m.index ?? 0) + m[0].length;
  if (lastClose >= 0) ranges.push([0, lastClose]);
  const open = /<think(?:ing)?>/gi;
  open.lastIndex = Math.max(lastClose, 0);
  const unclosed = open.exec(text);
  if (unclosed) ranges.push([unclosed.index, text.length]);
  return ranges;
}

/**
 * The response with thoughts, fenced and inline code, block quotes and quoted spans that mention an
 * answer replaced by spaces (same length, same line breaks). Linear in the text's length.
 *
 * @example
 * ```ts
 * maskAsides('Use `\\boxed{1}`. So \\boxed{2}'); // 'Use              . So \\boxed{2}'
 * ```
 */
export function maskAsides(text: string): string {
  if (typeof text !== 'string') return '';
  let s = text;
  for (const [start, end] of thoughtRanges(s)) s = s.slice(0, start) + blank(s.slice(start, end)) + s.slice(end);
  s = blankFences(s);
  s = s.replace(INLINE_CODE, blank);
  s = s.replace(BLOCK_QUOTE, blank);
  s = s.replace(QUOTED, (q) => (MARKER.test(q) ? blank(q) : q));
  return s;
}

/**
 * Fenced blocks as the SDK's `extractCodeBlocks` reads them: a fence (```` ``` ```` or `~~~`), the rest
 * of its line (the language), then everything up to the next identical fence; an unclosed block runs
 * to the end of the text. A fence with no line break after it opens nothing.
 */
function blankFences(text: string): string {
  let out = '';
  let from = 0;
  for (;;) {
    const tick = text.indexOf('```', from);
    const tilde = text.indexOf('~~~', from);
    const start = tick < 0 ? tilde : tilde < 0 ? tick : Math.min(tick, tilde);
    if (start < 0) break;
    const fence = text.slice(start, start + 3);
    const newline = text.indexOf('\n', start + 3);
    if (newline < 0) break;
    const close = text.indexOf(fence, newline + 1);
    const end = close < 0 ? text.length : close + 3;
    out += text.slice(from, start) + blank(text.slice(start, end));
    from = end;
    if (close < 0) break;
  }
  return out + text.slice(from);
}
