import { Board, cellSymbol } from './board';

/**
 * Draws the board as text with 0-based row and column indices. Every cell is three characters wide
 * and the units digit of each column index sits above its cells, so columns stay aligned on boards
 * with two-digit indices (11×11 and up). The cell `highlight` (the opponent's last move) is drawn in
 * brackets, e.g. `[O]`. Lines carry no trailing spaces.
 *
 * @example
 * ```text
 *    0  1  2  3  4
 * 0  .  .  .  .  .
 * 1  .  X  .  .  .
 * 2  .  . [O] .  .
 * 3  .  .  .  .  .
 * 4  .  .  .  .  .
 * ```
 */
export function renderBoard(board: Board, highlight: number | null = null): string {
  const n = board.size;
  const labelWidth = String(n - 1).length;
  const lines: string[] = [];
  let header = ' '.repeat(labelWidth + 1);
  for (let c = 0; c < n; c++) header += (c < 10 ? ' ' : '') + c + ' ';
  lines.push(header.trimEnd());
  const cells = board.cells;
  for (let r = 0; r < n; r++) {
    let line = String(r).padStart(labelWidth) + ' ';
    for (let c = 0; c < n; c++) {
      const i = r * n + c;
      const s = cellSymbol(cells[i]);
      line += i === highlight ? '[' + s + ']' : ' ' + s + ' ';
    }
    lines.push(line.trimEnd());
  }
  return lines.join('\n');
}

/** `(row, col)` for a flat cell index. */
export function formatCell(board: Board, cell: number): string {
  const row = (cell / board.size) | 0;
  return `(${row}, ${cell - row * board.size})`;
}
