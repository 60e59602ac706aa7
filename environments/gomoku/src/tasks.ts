import { createRng, EnvironmentError, type Rng, type Split, type TaskSet } from '@opentinker/env-sdk';
import { Board, DIRECTIONS, EMPTY, O, other, X, type Player } from './board';
import type { GomokuConfig } from './config';
import { greedyMove } from './opponent';

/**
 * A gomoku task: its index in the split and, optionally, opening stones as 0-based `[row, col]`
 * pairs. Opening stones are played in turn order before the game starts: the first by whoever moves
 * first (X when `model_first`), then alternating. `initial_moves` (OpenTinker's key, what its clients
 * send) instead places X first, then O, alternating, and X moves next whatever their count. With
 * `task_hints`, `hint` is a good first move for X (the greedy heuristic's) as `"row,col"`: a
 * demonstration for an SFT warm-up, unused by the game.
 *
 * @example
 * ```json
 * { "index": 3, "opening": [[4, 4], [3, 5]], "hint": "4,3" }
 * ```
 */
export type GomokuTask = { index: number; opening?: Array<[number, number]>; initial_moves?: Array<[number, number]>; hint?: string };

/** The player who places the first stone of a game. */
export function firstPlayer(config: Pick<GomokuConfig, 'model_first'>): Player {
  return config.model_first ? X : O;
}

/**
 * The task set: an endless train split and a test split of `test_size` tasks. Task `index` of a split
 * is made from the index alone (openings come from a RNG seeded with the split and index).
 */
export function gomokuTasks(config: GomokuConfig): TaskSet<GomokuTask> {
  return {
    size: (split) => (split === 'train' ? null : config.test_size),
    get: (split, index) => makeTask(config, split, index),
  };
}

/** Task `index` of a split. Throws `ENV_INVALID_TASK` for an index outside the split. */
export function makeTask(config: GomokuConfig, split: Split, index: number): GomokuTask {
  if (split !== 'train' && split !== 'test') throw new EnvironmentError('ENV_INVALID_TASK', `Unknown split ${JSON.stringify(split)}`, 'split');
  if (!Number.isSafeInteger(index) || index < 0) throw new EnvironmentError('ENV_INVALID_TASK', `Task index must be a non-negative integer, got ${index}`, 'index');
  if (split === 'test' && index >= config.test_size) {
    throw new EnvironmentError('ENV_INVALID_TASK', `The test split has ${config.test_size} tasks; index ${index} is out of range`, 'index');
  }
  if (config.random_opening_moves === 0 && !config.task_hints) return { index };
  // Distinct streams for train and test: index i of each split gets a different opening.
  const rng = createRng(index * 2 + (split === 'test' ? 1 : 0));
  const board = new Board({ size: config.board_size, winLength: config.win_length, allowOverline: config.allow_overline });
  const opening = randomOpening(config, board, rng);
  if (!config.task_hints) return { index, opening };
  // The config guarantees X is to move here. Ties are broken by the same stream, so a task is still a
  // function of its split and index.
  const hint = greedyMove(board, X, rng);
  return { index, ...(opening.length > 0 ? { opening } : {}), hint: `${(hint / board.size) | 0},${hint % board.size}` };
}

/** Plays the task's opening (`random_opening_moves` quiet stones, or a count down to `random_opening_moves_min`) on `board` in turn order; returns [row, col] pairs. */
function randomOpening(config: GomokuConfig, board: Board, rng: Rng): Array<[number, number]> {
  const opening: Array<[number, number]> = [];
  let player = firstPlayer(config);
  let count = config.random_opening_moves;
  if (config.random_opening_moves_min !== null) {
    // Same parity as the maximum, so every task has the same side to move.
    const low = config.random_opening_moves_min + ((count - config.random_opening_moves_min) % 2);
    count = low + 2 * rng.int(0, (count - low) / 2);
  }
  for (let k = 0; k < count; k++) {
    const cell = pickQuietCell(board, player, rng);
    if (cell < 0) break;
    board.place(cell, player);
    opening.push([(cell / board.size) | 0, cell % board.size]);
    player = other(player);
  }
  return opening;
}

/**
 * A random empty cell where a `player` stone leaves nobody a win on the next move (so a game never
 * starts decided), or -1 if there is none. Invariant: before the call nobody has a win in one, so
 * only cells on the four lines through the new stone, within `winLength` of it, can gain one (and
 * only for `player`: a stone never lengthens the other colour's lines).
 */
function pickQuietCell(board: Board, player: Player, rng: Rng): number {
  const n = board.size;
  const reach = board.winLength;
  const quiet = (cell: number): boolean => {
    board.place(cell, player);
    let ok = !board.wins(cell, player);
    const row = (cell / n) | 0;
    const col = cell - row * n;
    for (let d = 0; ok && d < 4; d++) {
      const [dr, dc] = DIRECTIONS[d];
      for (let k = -reach; ok && k <= reach; k++) {
        const r = row + k * dr;
        const c = col + k * dc;
        if (k !== 0 && board.inside(r, c) && board.cells[r * n + c] === EMPTY && board.wins(r * n + c, player)) ok = false;
      }
    }
    board.remove(cell);
    return ok;
  };
  for (let tries = 0; tries < 32; tries++) {
    const cell = rng.int(0, board.cells.length - 1);
    if (board.cells[cell] === EMPTY && quiet(cell)) return cell;
  }
  for (const cell of rng.shuffle(board.empties())) if (quiet(cell)) return cell;
  return -1;
}

/** A task read back for an episode: its index, the opening as flat cell indices, and who placed the first stone. */
export interface ReadTask {
  index: number;
  opening: number[];
  /**
   * `opening`: stones in turn order from the config's first mover, the side to move following from
   * their count. `initial_moves`: OpenTinker's, placed X first, then O, alternating, and X (the model)
   * moves next whatever their count, as OpenTinker's `GomokuGame.reset(initial_moves)` plays them.
   */
  form: 'opening' | 'initial_moves';
}

/**
 * Validates a task handed to `reset` (a generated one, or one a user wrote). `null` or `{}` is an
 * empty board. The stones come as `opening` (this environment's) or `initial_moves` (OpenTinker's key,
 * what its clients send to `/reset`), not both. Throws `ENV_INVALID_TASK` naming the problem.
 */
export function readTask(raw: unknown, config: GomokuConfig): ReadTask {
  if (raw === null || raw === undefined) return { index: 0, opening: [], form: 'opening' };
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new EnvironmentError('ENV_INVALID_TASK', 'A gomoku task must be an object like { "index": 0, "opening": [[4, 4]] }', 'task');
  }
  const task = raw as { index?: unknown; opening?: unknown; initial_moves?: unknown };
  const index = task.index ?? 0;
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0) {
    throw new EnvironmentError('ENV_INVALID_TASK', 'task.index must be a non-negative integer', 'task.index');
  }
  const hasOpening = task.opening !== undefined && task.opening !== null;
  const hasInitial = task.initial_moves !== undefined && task.initial_moves !== null;
  if (hasOpening && hasInitial) {
    throw new EnvironmentError('ENV_INVALID_TASK', "Give the stones as task.opening or as task.initial_moves (OpenTinker's key), not both", 'task.initial_moves');
  }
  const form = hasInitial ? 'initial_moves' : 'opening';
  return { index, opening: hasOpening || hasInitial ? readStones(hasInitial ? task.initial_moves : task.opening, `task.${form}`, config.board_size) : [], form };
}

/** A list of distinct on-board [row, col] pairs, as cells. */
function readStones(stones: unknown, field: string, n: number): number[] {
  if (!Array.isArray(stones)) throw new EnvironmentError('ENV_INVALID_TASK', `${field} must be a list of [row, col] pairs`, field);
  if (stones.length * 2 > n * n) throw new EnvironmentError('ENV_INVALID_TASK', `${field} fills more than half the board`, field);
  const cells: number[] = [];
  const seen = new Set<number>();
  for (const [k, stone] of stones.entries()) {
    const ok = Array.isArray(stone) && stone.length === 2 && stone.every((v) => Number.isInteger(v) && v >= 0 && v < n);
    if (!ok) throw new EnvironmentError('ENV_INVALID_TASK', `${field}[${k}] must be a [row, col] pair with 0 ≤ row, col < ${n}`, `${field}.${k}`);
    const cell = (stone[0] as number) * n + (stone[1] as number);
    if (seen.has(cell)) throw new EnvironmentError('ENV_INVALID_TASK', `${field}[${k}] repeats (${stone[0]}, ${stone[1]})`, `${field}.${k}`);
    seen.add(cell);
    cells.push(cell);
  }
  return cells;
}
