/**
 * The Gomoku board: an N×N grid of cells, each empty, X or O, with the win rule (N in a row, with or
 * without overlines). Cells are addressed by a flat index `row * size + col`; rows and columns are
 * 0-based.
 */

/** Cell values. */
export const EMPTY = 0;
export const X = 1;
export const O = 2;
export type Player = typeof X | typeof O;
export type Cell = typeof EMPTY | Player;

/** The other player. */
export function other(player: Player): Player {
  return player === X ? O : X;
}

/** `'X'`, `'O'` or `'.'` for a cell value. */
export function cellSymbol(cell: number): string {
  return cell === X ? 'X' : cell === O ? 'O' : '.';
}

/** The four line directions as [dRow, dCol]: horizontal, vertical, diagonal (↘), anti-diagonal (↙). */
export const DIRECTIONS: ReadonlyArray<readonly [number, number]> = [
  [0, 1],
  [1, 0],
  [1, 1],
  [1, -1],
];

/** Board geometry and rule. */
export interface BoardRules {
  /** Width and height of the board. */
  size: number;
  /** Stones in a row needed to win. */
  winLength: number;
  /**
   * Whether a line longer than `winLength` (an overline) wins. `true` is freestyle Gomoku; `false`
   * is the "exactly N" rule: only a line of exactly `winLength` stones wins.
   */
  allowOverline: boolean;
}

/**
 * A mutable board. `place` does not check the win rule itself: ask {@link Board.wins} for the cell
 * just played (or about to be played).
 *
 * @example
 * ```ts
 * const board = new Board({ size: 9, winLength: 5, allowOverline: true });
 * for (let c = 0; c < 5; c++) board.place(board.index(0, c), X);
 * board.wins(board.index(0, 4), X); // true
 * ```
 */
export class Board {
  readonly size: number;
  readonly winLength: number;
  readonly allowOverline: boolean;
  /** Row-major cells: {@link EMPTY}, {@link X} or {@link O}. */
  readonly cells: Uint8Array;
  /** Number of stones on the board. */
  stones = 0;

  constructor(rules: BoardRules) {
    if (!Number.isInteger(rules.size) || rules.size < 1) throw new RangeError(`board size ${rules.size}`);
    if (!Number.isInteger(rules.winLength) || rules.winLength < 1 || rules.winLength > rules.size) {
      throw new RangeError(`win length ${rules.winLength} on a ${rules.size}×${rules.size} board`);
    }
    this.size = rules.size;
    this.winLength = rules.winLength;
    this.allowOverline = rules.allowOverline;
    this.cells = new Uint8Array(rules.size * rules.size);
  }

  /** Flat index of (row, col). */
  index(row: number, col: number): number {
    return row * this.size + col;
  }

  /** Whether (row, col) is on the board. */
  inside(row: number, col: number): boolean {
    return row >= 0 && col >= 0 && row < this.size && col < this.size;
  }

  /** The value at (row, col); the position must be inside. */
  at(row: number, col: number): Cell {
    return this.cells[row * this.size + col] as Cell;
  }

  /** Whether every cell is taken. */
  isFull(): boolean {
    return this.stones === this.cells.length;
  }

  /** Puts a stone on an empty cell. Throws a RangeError on an occupied or missing cell (a caller bug). */
  place(cell: number, player: Player): void {
    if (!(cell >= 0 && cell < this.cells.length) || this.cells[cell] !== EMPTY) throw new RangeError(`cell ${cell} is not an empty cell`);
    this.cells[cell] = player;
    this.stones++;
  }

  /** Removes a stone (used by search, tests and undo). */
  remove(cell: number): void {
    if (this.cells[cell] !== EMPTY) {
      this.cells[cell] = EMPTY;
      this.stones--;
    }
  }

  /**
   * Length of the unbroken line of `player` stones through `cell` in direction (dr, dc), counting
   * `cell` itself as `player`'s whatever it holds.
   */
  lineThrough(cell: number, player: Player, dr: number, dc: number): number {
    const n = this.size;
    const row = (cell / n) | 0;
    const col = cell - row * n;
    const cells = this.cells;
    let length = 1;
    for (let r = row + dr, c = col + dc; r >= 0 && r < n && c >= 0 && c < n && cells[r * n + c] === player; r += dr, c += dc) length++;
    for (let r = row - dr, c = col - dc; r >= 0 && r < n && c >= 0 && c < n && cells[r * n + c] === player; r -= dr, c -= dc) length++;
    return length;
  }

  /**
   * Whether a `player` stone at `cell` makes a winning line (the stone may be on the board already, or
   * the cell may be empty: a look-ahead). With overlines disallowed only a line of exactly
   * `winLength` wins, though an exact line in another direction through the same stone still does.
   */
  wins(cell: number, player: Player): boolean {
    const need = this.winLength;
    for (let d = 0; d < 4; d++) {
      const [dr, dc] = DIRECTIONS[d];
      const length = this.lineThrough(cell, player, dr, dc);
      if (length === need || (length > need && this.allowOverline)) return true;
    }
    return false;
  }

  /** Indices of the empty cells, in row-major order. */
  empties(): number[] {
    const out: number[] = [];
    const cells = this.cells;
    for (let i = 0; i < cells.length; i++) if (cells[i] === EMPTY) out.push(i);
    return out;
  }

  /** The winner of the position (a completed line anywhere), or null. Slow path for checks and tests. */
  findWinner(): Player | null {
    for (let i = 0; i < this.cells.length; i++) {
      const p = this.cells[i];
      if (p !== EMPTY && this.wins(i, p as Player)) return p as Player;
    }
    return null;
  }

  /** An independent copy. */
  clone(): Board {
    const copy = new Board({ size: this.size, winLength: this.winLength, allowOverline: this.allowOverline });
    copy.cells.set(this.cells);
    copy.stones = this.stones;
    return copy;
  }
}
