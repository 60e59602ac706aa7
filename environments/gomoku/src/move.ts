import { parseTaggedAction } from '@opentinker/env-sdk';

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
 * Checks the range, not whether the cell is free. Never throws.
 *
 * @example
 * ```ts
 * parseMove('I block: <move>3,4</move>', 9); // { ok: true, row: 3, col: 4 }
 * parseMove('<move>9,0</move>', 9);          // { ok: false, error: 'out_of_range', row: 9, col: 0 }
 * ```
 */
export function parseMove(text: string, size: number): ParsedMove {
  const content = parseTaggedAction(typeof text === 'string' ? text : '', 'move');
  if (content === null) return { ok: false, error: 'missing_tag' };
  const m = COORDS.exec(content);
  if (!m) return { ok: false, error: 'unparsable', content };
  const row = Number(m[1]);
  const col = Number(m[2]);
  if (!(row >= 0 && col >= 0 && row < size && col < size)) return { ok: false, error: 'out_of_range', row, col };
  return { ok: true, row, col };
}
