import { z } from '@opentinker/env-sdk';

/** Default rewards, OpenTinker's: win +10, loss −10, draw 0, invalid move −1, timeout −20. */
export const DEFAULT_REWARDS = { win: 10, loss: -10, draw: 0, invalid_move: -1, timeout: -20 } as const;

const reward = (value: number, what: string) => z.number().finite().default(value).describe(what);

/** Rewards of the terminal results and of an invalid move. */
export const rewardsSchema = z
  .object({
    win: reward(DEFAULT_REWARDS.win, 'The model (X) completes a line'),
    loss: reward(DEFAULT_REWARDS.loss, 'The opponent (O) completes a line'),
    draw: reward(DEFAULT_REWARDS.draw, 'The board fills up with no line'),
    invalid_move: reward(DEFAULT_REWARDS.invalid_move, 'Each unparsable, off-board or occupied move (also the one that ends the game)'),
    timeout: reward(DEFAULT_REWARDS.timeout, 'The game is still running after max_turns model replies'),
  })
  .strict();

/**
 * The gomoku config. Every key has a default; unknown keys are refused.
 *
 * @example
 * ```ts
 * gomokuConfigSchema.parse({ board_size: 15, opponent: 'greedy', rewards: { draw: 1 } });
 * ```
 */
export const gomokuConfigSchema = z
  .object({
    board_size: z.number().int().min(5).max(19).default(9).describe('Width and height of the board'),
    win_length: z.number().int().min(3).max(19).default(5).describe('Stones in a row needed to win (at most board_size)'),
    allow_overline: z
      .boolean()
      .default(true)
      .describe('Whether a line longer than win_length wins (true: freestyle); false: only exactly win_length wins'),
    opponent: z.enum(['random', 'greedy']).default('random').describe('random: any empty cell; greedy: wins, else blocks, else the best-scoring cell'),
    model_first: z.boolean().default(true).describe('Whether the model (X) moves first'),
    max_invalid_moves: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(3)
      .describe('Invalid moves allowed in an episode; the one that reaches this count ends the game (result "invalid")'),
    max_turns: z
      .number()
      .int()
      .min(1)
      .nullable()
      .default(null)
      .describe('Model replies (valid or not) before the game ends with a timeout; null means board_size²'),
    test_size: z.number().int().min(1).max(1_000_000).default(64).describe('Number of tasks in the test split'),
    random_opening_moves: z
      .number()
      .int()
      .min(0)
      .max(40)
      .default(0)
      .describe('Random stones played (in turn order) before the game starts, drawn from a seeded RNG on the task index'),
    rewards: rewardsSchema.prefault({}).describe('Rewards; missing keys keep their defaults'),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.win_length > config.board_size) {
      ctx.addIssue({ code: 'custom', path: ['win_length'], message: `must be at most board_size (${config.board_size})` });
    }
    if (config.random_opening_moves * 4 > config.board_size * config.board_size) {
      ctx.addIssue({ code: 'custom', path: ['random_opening_moves'], message: `must be at most a quarter of the board (${Math.floor((config.board_size * config.board_size) / 4)})` });
    }
  });

/** A parsed gomoku config (defaults filled). */
export type GomokuConfig = z.output<typeof gomokuConfigSchema>;
/** What a user may write (every key optional). */
export type GomokuConfigInput = z.input<typeof gomokuConfigSchema>;
