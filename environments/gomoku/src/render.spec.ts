import { Board, O, X } from './board';
import { formatCell, renderBoard, renderCompactBoard } from './render';

describe('renderBoard', () => {
  it('draws a 9×9 board with one-digit indices and the last move in brackets', () => {
    const board = new Board({ size: 9, winLength: 5, allowOverline: true });
    board.place(board.index(3, 3), X);
    board.place(board.index(4, 4), X);
    board.place(board.index(0, 8), O);
    board.place(board.index(4, 5), O);
    expect(renderBoard(board, board.index(4, 5))).toBe(
      [
        '   0  1  2  3  4  5  6  7  8',
        '0  .  .  .  .  .  .  .  .  O',
        '1  .  .  .  .  .  .  .  .  .',
        '2  .  .  .  .  .  .  .  .  .',
        '3  .  .  .  X  .  .  .  .  .',
        '4  .  .  .  .  X [O] .  .  .',
        '5  .  .  .  .  .  .  .  .  .',
        '6  .  .  .  .  .  .  .  .  .',
        '7  .  .  .  .  .  .  .  .  .',
        '8  .  .  .  .  .  .  .  .  .',
      ].join('\n'),
    );
  });

  it('draws a 15×15 board with two-digit indices, columns aligned', () => {
    const board = new Board({ size: 15, winLength: 5, allowOverline: true });
    board.place(board.index(0, 0), X);
    board.place(board.index(14, 14), X);
    board.place(board.index(10, 10), O);
    board.place(board.index(14, 0), O);
    const text = renderBoard(board, board.index(10, 10));
    expect(text).toBe(
      [
        '    0  1  2  3  4  5  6  7  8  9 10 11 12 13 14',
        ' 0  X  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 1  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 2  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 3  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 4  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 5  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 6  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 7  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 8  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        ' 9  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        '10  .  .  .  .  .  .  .  .  .  . [O] .  .  .  .',
        '11  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        '12  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        '13  .  .  .  .  .  .  .  .  .  .  .  .  .  .  .',
        '14  O  .  .  .  .  .  .  .  .  .  .  .  .  .  X',
      ].join('\n'),
    );
  });

  it.each([5, 9, 10, 11, 15, 19])('keeps every column aligned on a %i×%i board', (n) => {
    const board = new Board({ size: n, winLength: 5, allowOverline: true });
    // Stones on the main diagonal: the symbol of row r sits under the units digit of column r.
    for (let i = 0; i < n; i++) board.place(board.index(i, i), i % 2 ? O : X);
    const lines = renderBoard(board, board.index(n - 1, n - 1)).split('\n');
    expect(lines).toHaveLength(n + 1);
    const header = lines[0];
    for (let r = 0; r < n; r++) {
      const line = lines[r + 1];
      expect(line.startsWith(String(r).padStart(String(n - 1).length) + ' ')).toBe(true);
      const at = line.search(/[XO]/);
      expect(header[at]).toBe(String(r % 10)); // units digit of the column index
      expect(
        header
          .slice(0, at + 1)
          .trimStart()
          .split(/\s+/)
          .pop(),
      ).toBe(String(r)); // the whole index ends there
      expect(line).toBe(line.trimEnd());
    }
    expect(lines[n].endsWith(`[${(n - 1) % 2 ? 'O' : 'X'}]`)).toBe(true);
  });

  it('formats cells as (row, col)', () => {
    const board = new Board({ size: 15, winLength: 5, allowOverline: true });
    expect(formatCell(board, board.index(12, 3))).toBe('(12, 3)');
  });
});

describe('renderCompactBoard', () => {
  it('draws bare rows of X, O and ., row r on line r, column c at character c', () => {
    const board = new Board({ size: 5, winLength: 4, allowOverline: true });
    board.place(board.index(1, 1), X);
    board.place(board.index(2, 4), O);
    const text = renderCompactBoard(board);
    expect(text).toBe(['.....', '.X...', '....O', '.....', '.....'].join('\n'));
    expect(text).toHaveLength(29);
    expect(text.split('\n')[2][4]).toBe('O');
  });
});
