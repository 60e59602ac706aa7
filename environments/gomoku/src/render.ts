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

/**
 * Draws the board as bare rows of `X`, `O` and `.`, one line per row, no labels or spaces: a 5×5 board
 * is 29 characters. Cell (r, c) is character c of line r, so in a prompt that ends with the board and
 * a fixed request every cell sits at a fixed distance from the reply: small models with relative
 * positions (RoPE) read it without counting labels.
 *
 * @example
 * ```text
 * .....
 * .X...
 * ..O..
 * .....
 * .....
 * ```
 */
export function renderCompactBoard(board: Board): string {
  const n = board.size;
  const cells = board.cells;
  const lines: string[] = [];
  for (let r = 0; r < n; r++) {
    let line = '';
    for (let c = 0; c < n; c++) line += cellSymbol(cells[r * n + c]);
    lines.push(line);
  }
  return lines.join('\n');
}
