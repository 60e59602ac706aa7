import { maskThoughtsAndCode, parseTaggedAction } from '@opentinker/env-sdk';

/** Why a reply is not a legal move. */
export type MoveErrorKind = 'missing_tag' | 'unparsable' | 'out_of_range' | 'occupied';

/** The result of reading a reply: a 0-based (row, col), or why none could be read. */
export type ParsedMove =
  | { ok: true; row: number; col: number }
  | { ok: false; error: 'missing_tag' }
  | { ok: false; error: 'unparsable'; content: string }
  | { ok: false; error: 'out_of_range'; row: number; col: number };

const COORDS = /^[([]?\s*([+-]?\d+)\s*,\s*([+-]?\d+)\s*[)\]]?$/;

/**
 * Reads the move in a reply: the content of its last `<move>…</move>` tag, as 0-based `row,col`
 * (spaces and one pair of enclosing parentheses or brackets are tolerated: `<move>(3, 4)</move>`).
 * A tag inside a thought (`<think>…</think>`) or in code (fenced or inline) is not a move: the model
 * is weighing or quoting a move there, not playing it (the SDK's `maskThoughtsAndCode`). One reply plays at
 * most one move, whatever it holds: the last tag, never two. With `format: 'bare'` a reply that is
 * only the coordinates (`3,4`, thoughts aside) is read too. Checks the range, not whether the cell is
 * free. Never throws.
 *
 * @example
 * ```ts
 * parseMove('I block: <move>3,4</move>', 9); // { ok: true, row: 3, col: 4 }
 * parseMove('<move>9,0</move>', 9);          // { ok: false, error: 'out_of_range', row: 9, col: 0 }
 * parseMove('3,4', 9, 'bare');                // { ok: true, row: 3, col: 4 }
 * ```
 */
export function parseMove(text: string, size: number, format: 'tag' | 'bare' = 'tag'): ParsedMove {
  const reply = maskThoughtsAndCode(text);
  let content = parseTaggedAction(reply, 'move');
  // A bare reply is the coordinates alone; anything else around them is still a missing tag.
  if (content === null && format === 'bare' && COORDS.test(reply.trim())) content = reply.trim();
  if (content === null) return { ok: false, error: 'missing_tag' };
  const m = COORDS.exec(content);
  if (!m) return { ok: false, error: 'unparsable', content };
  const row = Number(m[1]);
  const col = Number(m[2]);
  if (!(row >= 0 && col >= 0 && row < size && col < size)) return { ok: false, error: 'out_of_range', row, col };
  return { ok: true, row, col };
}
