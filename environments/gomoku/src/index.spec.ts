import { describeConformance } from '@opentinker/env-sdk/testing';
import type { Message } from '@opentinker/env-sdk';
import gomoku from './index';

/**
 * Reads the board from the last user message and plays the first empty cell in row-major order, or
 * (every 7th turn) a deliberately bad reply, so trajectories mix valid and invalid moves.
 */
function boardReadingPolicy(messages: Message[], turn: number): string {
  if (turn % 7 === 3) return 'I pass.';
  const text = messages[messages.length - 1].content;
  const lines = text.split('\n');
  const header = lines.findIndex((l) => /^\s+0 +1 /.test(l));
  for (let r = 0; header >= 0 && header + 1 + r < lines.length; r++) {
    const line = lines[header + 1 + r];
    const m = /^\s*(\d+) /.exec(line);
    if (!m || Number(m[1]) !== r) break;
    const cells = line.slice(m[0].length - 1).match(/.{1,3}/g) ?? [];
    const col = cells.findIndex((cell) => cell.trim() === '.');
    if (col >= 0) return `Scanning for the first empty cell. <move>${r},${col}</move>`;
  }
  return '<move>0,0</move>';
}

describeConformance(gomoku, { policy: boardReadingPolicy });
describeConformance(gomoku, {
  config: { board_size: 15, opponent: 'greedy', model_first: false, random_opening_moves: 4, allow_overline: false },
  policy: boardReadingPolicy,
  seeds: [1, 2, 3, 99],
});
describeConformance(gomoku, { config: { board_size: 5, win_length: 4, max_invalid_moves: 1 }, policy: (_m, turn) => `<move>${turn % 5},${(turn * 2) % 5}</move>` });

describe('gomoku definition', () => {
  it('declares a multi-turn, data-free environment', () => {
    expect(gomoku.id).toBe('gomoku');
    expect(gomoku.turnMode).toBe('multi');
    expect(gomoku.taskSource).toBe('generator');
  });

  it('the board-reading policy finds the first empty cell, also on 15×15 boards', () => {
    const board = [
      'You played (0, 0).',
      '',
      '    0  1  2  3  4  5  6  7  8  9 10 11 12 13 14',
      ...Array.from(
        { length: 15 },
        (_, r) =>
          `${String(r).padStart(2)} ` +
          Array.from({ length: 15 }, (_, c) => (r < 11 || (r === 11 && c < 12) ? ' X ' : ' . '))
            .join('')
            .trimEnd(),
      ),
    ].join('\n');
    expect(boardReadingPolicy([{ role: 'user', content: board }], 0)).toContain('<move>11,12</move>');
  });
});
