import { Board, O, renderBoard, X } from '@opentinker/env-gomoku';
import { findBoard, parseBoard } from '../../src/dashboard/public/episodes.mjs';

// The dashboard draws gomoku episodes by parsing the board text the environment renders: this holds the
// two to one format. It lives here, above both, because src/ never imports an environment.
describe('the dashboard reads the boards gomoku renders', () => {
  it.each([5, 11])('reads back the board gomoku draws (size %i), with the highlighted stone', (size) => {
    const board = new Board({ size, winLength: 5, allowOverline: true });
    board.place(board.index(1, 2), X);
    board.place(board.index(size - 1, size - 1), O);
    const parsed = parseBoard(`Your move.\n${renderBoard(board, board.index(size - 1, size - 1))}\nReply with <move>r,c</move>.`);
    expect(parsed?.size).toBe(size);
    expect(parsed?.cells[1][2]).toBe('X');
    expect(parsed?.cells[size - 1][size - 1]).toBe('O');
    expect(parsed?.cells.flat().filter((c) => c !== '.')).toHaveLength(2);
    expect(parsed?.highlight).toEqual([size - 1, size - 1]);
  });

  it('finds the last board of an episode, or none', () => {
    const early = new Board({ size: 5, winLength: 5, allowOverline: true });
    const late = new Board({ size: 5, winLength: 5, allowOverline: true });
    late.place(late.index(2, 2), X);
    const messages = [
      { role: 'user', content: renderBoard(early) },
      { role: 'assistant', content: '<move>2,2</move>' },
      { role: 'user', content: renderBoard(late) },
      { role: 'assistant', content: 'thinking…' },
    ];
    expect(findBoard(messages)?.cells[2][2]).toBe('X');
    expect(findBoard([{ role: 'user', content: 'What is 2+2?' }])).toBeNull();
    expect(parseBoard('   0  1  2\n0  .  .  .\n1  .  Q  .\n2  .  .  .')).toBeNull();
  });
});
