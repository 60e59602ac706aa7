/**
 * The parts of a response that are not the response's own statement of its answer: thoughts, code,
 * and quotations. An answer written there is a mention (a code example, a quoted instruction, a step of
 * thinking), not an answer, so {@link maskAsides} blanks them out before answers are looked for.
 */

import { maskThoughtsAndCode } from '@opentinker/env-sdk';

export { thoughtRanges } from '@opentinker/env-sdk';

/** Blanks a span, keeping its length and line breaks (so positions in the text stay valid). */
const blank = (span: string) => span.replace(/[^\n]/g, ' ');

/** Markdown block quotes: lines starting with `>`. */
const BLOCK_QUOTE = /^[ \t]*>[^\n]*/gm;
/** A quoted span on one line ("…", “…”) that mentions an answer marker; `5"` (inches) opens nothing. */
const QUOTED = /(?<![\w\\])"[^"\n]*"|\u201c[^\u201d\n]*\u201d/g;
const MARKER = /\\(?:boxed|fbox)|####|answer/i;

/**
 * The response with thoughts and code (the SDK's `maskThoughtsAndCode`), block quotes and quoted spans
 * that mention an answer replaced by spaces (same length, same line breaks). Linear in the text's
 * length.
 *
 * @example
 * ```ts
 * maskAsides('Use `\\boxed{1}`. So \\boxed{2}'); // 'Use              . So \\boxed{2}'
 * ```
 */
export function maskAsides(text: string): string {
  if (typeof text !== 'string') return '';
  return maskThoughtsAndCode(text)
    .replace(BLOCK_QUOTE, blank)
    .replace(QUOTED, (q) => (MARKER.test(q) ? blank(q) : q));
}
