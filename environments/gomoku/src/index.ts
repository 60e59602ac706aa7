/**
 * `@opentinker/env-gomoku`: multi-turn Gomoku against a built-in seeded opponent. The model plays X
 * and answers each turn with `<move>row,col</move>` (0-based). The default export is the environment
 * definition; the board, opponent, renderer and move parser are exported for reuse.
 */
import { defineEnvironment } from '@opentinker/env-sdk';
import { gomokuConfigSchema, type GomokuConfig } from './config';
import { GomokuEpisode } from './episode';
import { gomokuTasks, type GomokuTask } from './tasks';

export { Board, EMPTY, X, O, other, DIRECTIONS } from './board';
export type { Player, Cell, BoardRules } from './board';
export { gomokuConfigSchema, rewardsSchema, DEFAULT_REWARDS } from './config';
export type { GomokuConfig, GomokuConfigInput } from './config';
export { GomokuEpisode } from './episode';
export type { GomokuInfo, GomokuResult } from './episode';
export { parseMove } from './move';
export type { ParsedMove, MoveErrorKind } from './move';
export { opponentMove, randomMove, greedyMove, heuristicScores } from './opponent';
export type { OpponentKind } from './opponent';
export { renderBoard, formatCell } from './render';
export { systemPrompt } from './prompt';
export { gomokuTasks, makeTask, readTask } from './tasks';
export type { GomokuTask } from './tasks';

/**
 * The gomoku environment.
 *
 * @example
 * ```ts
 * import gomoku from '@opentinker/env-gomoku';
 * import { parseConfig } from '@opentinker/env-sdk';
 *
 * const instance = await gomoku.create(parseConfig(gomoku, { board_size: 15, opponent: 'greedy' }), ctx);
 * const episode = instance.newEpisode();
 * const messages = episode.reset(await instance.tasks.get('test', 0), 42);
 * const { observation, reward, done, info } = await episode.step('<move>7,7</move>');
 * ```
 */
const gomoku = defineEnvironment<GomokuConfig, GomokuTask>({
  id: 'gomoku',
  version: '1.0.0',
  description: 'Gomoku (N in a row) on an N×N board against a built-in random or greedy opponent; the model plays X with <move>row,col</move>',
  turnMode: 'multi',
  taskSource: 'generator',
  configSchema: gomokuConfigSchema,
  create: (config) => ({
    tasks: gomokuTasks(config),
    newEpisode: () => new GomokuEpisode(config),
    close: () => undefined,
  }),
});

export default gomoku;
