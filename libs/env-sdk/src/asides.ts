/**
 * The parts of a policy's reply that are not its own action or answer: thoughts and code. A move or an
 * answer written there is the model considering or quoting one, not making it, so environments read
 * actions from {@link maskThoughtsAndCode}'s output. Positions are kept: spans are blanked, not cut.
 */

/** Blanks a span, keeping its length and line breaks (so positions in the text stay valid). */
const blank = (span: string) => span.replace(/[^\n]/g, ' ');

/** Inline code on one line: `` `…` `` or ``` ``…`` ```. */
const INLINE_CODE = /(``?)(?!`)[^`\n]+?\1(?!`)/g;

/**
 * The thoughts of a reply, as `[start, end)` ranges: `<think>…</think>` pairs; a `</think>` with no
 * `<think>` before it closes a thought that began where the reply (or the previous thought) ended, as
 * when the chat template opened `<think>` in the prompt; a `<think>` that never closes runs to the end.
 * `<thinking>` counts the same.
 *
 * @example
 * ```ts
 * thoughtRanges('reasoning</think>answer'); // [[0, 17]]
 * ```
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

/**
 * The reply with its thoughts (see {@link thoughtRanges}), fenced code blocks (```` ``` ```` or `~~~`,
 * read as `extractCodeBlocks` reads them; an unclosed block runs to the end) and inline code
 * replaced by spaces: same length, same line breaks. Linear in the reply's length. Never throws (a
 * non-string gives `''`).
 *
 * @example
 * ```ts
 * maskThoughtsAndCode('<think><move>1,1</move>?</think> <move>2,2</move>'); // spaces, then ' <move>2,2</move>'
 * ```
 */
export function maskThoughtsAndCode(text: string): string {
  if (typeof text !== 'string') return '';
  let s = blankRanges(text, thoughtRanges(text));
  s = blankFences(s);
  return s.replace(INLINE_CODE, blank);
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

/** Fenced blocks: a fence, the rest of its line (the language), then up to the next identical fence. */
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
    // A fence with no line break after it opens no block; inline code handles what remains.
    if (newline < 0) break;
    const close = text.indexOf(fence, newline + 1);
    const end = close < 0 ? text.length : close + 3;
    out += text.slice(from, start) + blank(text.slice(start, end));
    from = end;
    if (close < 0) break;
  }
  return out + text.slice(from);
}
