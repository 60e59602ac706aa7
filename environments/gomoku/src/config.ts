import { z } from '@opentinker/env-sdk';

/**
 * Default rewards, OpenTinker's `GomokuGame` constants: win +10, loss −10, draw 0, invalid move −1, the
 * invalid move that ends the game −20 (`REWARD_INVALID_GAME_OVER`), timeout −20; no per-move reward.
 */
export const DEFAULT_REWARDS = { win: 10, loss: -10, draw: 0, invalid_move: -1, invalid_game_over: -20, timeout: -20, move: 0 } as const;

const reward = (value: number, what: string) => z.number().finite().default(value).describe(what);

/** Rewards of the terminal results and of an invalid move. */
export const rewardsSchema = z
  .object({
    win: reward(DEFAULT_REWARDS.win, 'The model (X) completes a line'),
    loss: reward(DEFAULT_REWARDS.loss, 'The opponent (O) completes a line'),
    draw: reward(DEFAULT_REWARDS.draw, 'The board fills up with no line'),
    invalid_move: reward(DEFAULT_REWARDS.invalid_move, 'Each unparsable, off-board or occupied move that does not end the game'),
    invalid_game_over: reward(
      DEFAULT_REWARDS.invalid_game_over,
      'The invalid move that ends the game (the max_invalid_moves-th); with the invalid moves before it, never more than loss',
    ),
    timeout: reward(DEFAULT_REWARDS.timeout, 'The game is still running after max_turns model replies'),
    move: reward(DEFAULT_REWARDS.move, 'Each valid move that does not end the game (shaping: lets RL reward a policy that keeps making legal moves)'),
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
    allow_overline: z.boolean().default(true).describe('Whether a line longer than win_length wins (true: freestyle); false: only exactly win_length wins'),
    opponent: z.enum(['random', 'greedy']).default('random').describe('random: any empty cell; greedy: wins, else blocks, else the best-scoring cell'),
    model_first: z.boolean().default(true).describe('Whether the model (X) moves first'),
    max_invalid_moves: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(3)
      .describe('Invalid moves allowed in an episode; the one that reaches this count ends the game (result "invalid")'),
    max_turns: z.number().int().min(1).nullable().default(null).describe('Model replies (valid or not) before the game ends with a timeout; null means board_size²'),
    test_size: z.number().int().min(1).max(1_000_000).default(64).describe('Number of tasks in the test split'),
    random_opening_moves: z
      .number()
      .int()
      .min(0)
      .max(40)
      .default(0)
      .describe('Random stones played (in turn order) before the game starts, drawn from a seeded RNG on the task index'),
    random_opening_moves_min: z
      .number()
      .int()
      .min(0)
      .max(40)
      .nullable()
      .default(null)
      .describe(
        'With it, each task draws its number of opening stones from random_opening_moves_min…random_opening_moves, keeping the parity of random_opening_moves (so the same side is to move); null: exactly random_opening_moves',
      ),
    move_format: z
      .enum(['tag', 'bare'])
      .default('tag')
      .describe('tag: the move is the last <move>row,col</move> of the reply; bare: the reply may also be just row,col (a tag still counts when present)'),
    prompt_style: z
      .enum(['full', 'compact'])
      .default('full')
      .describe(
        'full: a system message with the rules and a labelled board; compact: no system message, the board as bare rows of X/O/. and a short request (fits small byte-level models)',
      ),
    task_hints: z
      .boolean()
      .default(false)
      .describe('Give each task a hint: the greedy heuristic\'s move for X in the opening position, as "row,col" (a target for an SFT warm-up: <move>{hint}</move>)'),
    rewards: rewardsSchema.prefault({}).describe('Rewards; missing keys keep their defaults'),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.win_length > config.board_size) {
      ctx.addIssue({ code: 'custom', path: ['win_length'], message: `must be at most board_size (${config.board_size})` });
    }
    if (config.random_opening_moves * 4 > config.board_size * config.board_size) {
      ctx.addIssue({
        code: 'custom',
        path: ['random_opening_moves'],
        message: `must be at most a quarter of the board (${Math.floor((config.board_size * config.board_size) / 4)})`,
      });
    }
    // Ending a game with invalid moves must never pay better than losing it, or a losing policy learns to
    // forfeit: the invalid moves allowed before the last one plus the game-ending one stay at or below a loss.
    const { invalid_move, invalid_game_over, loss } = config.rewards;
    const forfeit = (config.max_invalid_moves - 1) * invalid_move + invalid_game_over;
    if (forfeit > loss) {
      ctx.addIssue({
        code: 'custom',
        path: ['rewards', 'invalid_game_over'],
        message: `ending a game with ${config.max_invalid_moves} invalid move${config.max_invalid_moves === 1 ? '' : 's'} would pay ${forfeit}, more than a loss (${loss}): a losing policy would learn to forfeit; lower rewards.invalid_game_over or rewards.invalid_move`,
      });
    }
    if (config.random_opening_moves_min !== null && config.random_opening_moves_min > config.random_opening_moves) {
      ctx.addIssue({ code: 'custom', path: ['random_opening_moves_min'], message: `must be at most random_opening_moves (${config.random_opening_moves})` });
    }
    // A hint is X's move in the position the task starts from; when O is to move there, its first stone
    // comes from the episode's seed, so no task-only hint exists.
    if (config.task_hints && (config.random_opening_moves % 2 === 0) !== config.model_first) {
      ctx.addIssue({
        code: 'custom',
        path: ['task_hints'],
        message: 'needs X to move after the opening: an even random_opening_moves with model_first true, an odd one with model_first false',
      });
    }
  });

/** A parsed gomoku config (defaults filled). */
export type GomokuConfig = z.output<typeof gomokuConfigSchema>;
/** What a user may write (every key optional). */
export type GomokuConfigInput = z.input<typeof gomokuConfigSchema>;
