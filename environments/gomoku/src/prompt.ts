import type { GomokuConfig } from './config';

/** Wording shared by every observation that asks for a move. */
export const MOVE_REQUEST = 'Your move: reply with <move>row,col</move>.';

/**
 * The request that ends every observation with `prompt_style: 'compact'`, after the bare board: the
 * reply format is the same `<move>row,col</move>`, learnt from examples rather than read from rules.
 */
export const COMPACT_MOVE_REQUEST = 'X:';

/**
 * The system prompt: the rules for this config, the 0-based coordinate convention, the board legend
 * and the answer format.
 */
export function systemPrompt(config: GomokuConfig): string {
  const n = config.board_size;
  const k = config.win_length;
  const overline = config.allow_overline ? `A line longer than ${k} also wins.` : `Only a line of exactly ${k} wins: a line of ${k + 1} or more stones does not count.`;
  const invalid =
    config.max_invalid_moves === 1
      ? 'An invalid move (no tag, unreadable, off the board, or on a taken cell) ends the game with a penalty.'
      : `An invalid move (no tag, unreadable, off the board, or on a taken cell) costs a penalty and you are asked again; the ${ordinal(config.max_invalid_moves)} invalid move ends the game.`;
  return [
    `You are playing Gomoku on a ${n}×${n} board. You play X; your opponent plays O. Players take turns placing one stone on an empty cell.`,
    `The first player with ${k} stones in an unbroken line (horizontal, vertical or diagonal) wins. ${overline} If the board fills up with no winner, the game is a draw.`,
    `Coordinates are 0-based: rows are numbered 0 to ${n - 1} from top to bottom and columns 0 to ${n - 1} from left to right, as printed around the board; (0, 0) is the top-left corner.`,
    `On the board, X marks your stones, O the opponent's and . an empty cell; the opponent's last move is shown in brackets, like [O].`,
    `Answer every turn with one move in the form <move>row,col</move>, for example <move>${n >> 1},${n >> 1}</move>. You may think first; only the last <move> tag of your reply counts, and not one inside <think>…</think> or code.`,
    invalid,
  ].join('\n');
}

/** `1st`, `2nd`, `3rd`, `4th`, … */
export function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}
