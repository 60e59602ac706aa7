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
/** A quoted span on one line ("…", “…”) that mentions an answer marker; `5"` (inches) opens nothing. */
const QUOTED = /(?<![\w\\])"[^"\n]*"|\u201c[^\u201d\n]*\u201d/g;
const MARKER = /\\(?:boxed|fbox)|####|answer/i;

/**
 * The thoughts of a response, as `[start, end)` ranges: `<think>…</think>` pairs; a `</think>` with
 * no `<think>` before it closes a thought that began where the response (or the previous thought)
 * ended, as when the chat template opened `<think>` in the prompt; a `<think>` that never closes runs
 * to the end. `<thinking>` counts the same.
 */
export function thoughtRanges(text: string): Array<[number, number]> {
  const opens = [...text.matchAll(/<think(?:ing)?>/gi)].map((m) => [m.index ?? 0, (m.index ?? 0) + m[0].length]);
  const closes = [...text.matchAll(/<\/think(?:ing)?>/gi)].map((m) => [m.index ?? 0, (m.index ?? 0) + m[0].length]);
  const ranges: Array<[number, number]> = [];
  let pos = 0;
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < opens.length && opens[i][0] < pos) i++;
    while (j < closes.length && closes[j][0] < pos) j++;
    const o = opens[i];
    const c = closes[j];
    if (c && (!o || c[0] < o[0])) {
      ranges.push([pos, c[1]]);
      pos = c[1];
    } else if (o) {
      while (j < closes.length && closes[j][0] < o[1]) j++;
      const end = closes[j];
      ranges.push([o[0], end ? end[1] : text.length]);
      if (!end) break;
      pos = end[1];
    } else break;
  }
  return ranges;
}

/** The text with each of the (sorted, disjoint) ranges blanked, built in one pass. */
function blankRanges(text: string, ranges: Array<[number, number]>): string {
  let out = '';
  let from = 0;
  for (const [start, end] of ranges) {
    out += text.slice(from, start) + blank(text.slice(start, end));
    from = end;
  }
  return out + text.slice(from);
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
  s = blankRanges(s, thoughtRanges(s));
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
  // The next fence of each kind, looked up again only once passed (so many fences stay linear).
  let tick = -2;
  let tilde = -2;
  for (;;) {
    if (tick !== -1 && tick < from) tick = text.indexOf('```', from);
    if (tilde !== -1 && tilde < from) tilde = text.indexOf('~~~', from);
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
