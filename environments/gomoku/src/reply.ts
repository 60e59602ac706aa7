/**
 * The part of a reply that plays: a move written in a thought (`<think>…</think>`) or in code (a
 * fenced block or inline code) is the model considering or quoting a move, not making it, so those
 * parts are blanked before the move is read.
 */

/** Blanks a span, keeping its length and line breaks. */
const blank = (span: string) => span.replace(/[^\n]/g, ' ');

/**
 * The reply with its thoughts and code replaced by spaces:
 * - thoughts: `<think>…</think>` (also a `</think>` alone, when the chat template opened `<think>` in
 *   the prompt, and a `<think>` that never closes); `<thinking>` counts the same;
 * - code: fenced blocks (```` ``` ```` or `~~~`, up to the next identical fence or the end of the
 *   reply) and inline code (`` `…` `` on one line).
 * Linear in the reply's length.
 *
 * @example
 * ```ts
 * playedPart('<think><move>1,1</move>?</think> <move>2,2</move>'); // '…spaces… <move>2,2</move>'
 * ```
 */
export function playedPart(reply: string): string {
  let s = reply;
  s = blankRanges(s, thoughtRanges(s));
  s = blankFences(s);
  return s.replace(/`[^`\n]+`/g, blank);
}

/**
 * `[start, end)` of each thought: `<think>…</think>` pairs; a `</think>` with no `<think>` before it
 * closes a thought that began where the reply (or the previous thought) ended, as when the chat
 * template opened `<think>` in the prompt; a `<think>` that never closes runs to the end.
 */
function thoughtRanges(text: string): Array<[number, number]> {
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

/** Fenced blocks: a fence, the rest of its line, then up to the next identical fence (or the end). */
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
