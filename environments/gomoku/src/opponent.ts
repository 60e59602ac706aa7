import type { Rng } from '@opentinker/env-sdk';
import { Board, DIRECTIONS, EMPTY, other, type Player } from './board';

/** The built-in opponent's strength. */
export type OpponentKind = 'random' | 'greedy';

/**
 * The opponent's move for `player` on a board with at least one empty cell (a flat cell index).
 * All choices between equals come from `rng`, so the same seed replays the same game.
 *
 * - `random`: a uniformly random empty cell.
 * - `greedy`: a winning cell if there is one; else a cell that stops the other player from winning on
 *   their next move (the best-scoring one when there are several, e.g. both ends of an open four);
 *   else the cell with the best {@link heuristicScores} score.
 */
export function opponentMove(kind: OpponentKind, board: Board, player: Player, rng: Rng): number {
  if (board.isFull()) throw new RangeError('no empty cell to play');
  return kind === 'random' ? randomMove(board, rng) : greedyMove(board, player, rng);
}

/** A uniformly random empty cell. */
export function randomMove(board: Board, rng: Rng): number {
  const cells = board.cells;
  let k = rng.int(0, cells.length - board.stones - 1);
  for (let i = 0; i < cells.length; i++) {
    if (cells[i] === EMPTY && k-- === 0) return i;
  }
  throw new RangeError('no empty cell to play');
}

/** Win if possible, else block an immediate loss, else play the best heuristic cell. */
export function greedyMove(board: Board, player: Player, rng: Rng): number {
  const cells = board.cells;
  const opponent = other(player);
  const wins: number[] = [];
  const blocks: number[] = [];
  for (let i = 0; i < cells.length; i++) {
    if (cells[i] !== EMPTY) continue;
    if (board.wins(i, player)) wins.push(i);
    else if (board.wins(i, opponent)) blocks.push(i);
  }
  if (wins.length > 0) return rng.pick(wins);
  const scores = heuristicScores(board, player);
  return bestOf(blocks.length > 0 ? blocks : board.empties(), scores, rng);
}

/** The highest-scoring cell of `candidates`, ties broken by `rng`. */
function bestOf(candidates: number[], scores: Float64Array, rng: Rng): number {
  let best = -Infinity;
  const ties: number[] = [];
  for (const cell of candidates) {
    const s = scores[cell];
    if (s > best) {
      best = s;
      ties.length = 0;
      ties.push(cell);
    } else if (s === best) ties.push(cell);
  }
  return ties.length === 1 ? ties[0] : rng.pick(ties);
}

/** Value of a window holding k stones of one player and none of the other: 8^k. */
const BASE = 8;
/** Own lines count a little more than blocking the other's at the same length. */
const ATTACK = 5;
const DEFEND = 4;

/**
 * A score for every empty cell from `player`'s point of view (0 for taken cells). Every window of
 * `winLength` consecutive cells (in the four directions) that still can become a line adds to each of
 * its empty cells: 1 when it is empty, `5·8^k` when it holds k of `player`'s stones and none of the
 * other's (building), `4·8^k` when it holds k of the other's and none of `player`'s (blocking).
 * Windows holding both colours are dead and add nothing. Central cells lie in more windows, so an
 * empty board favours the centre. Scores are integers, so ties are exact.
 */
export function heuristicScores(board: Board, player: Player): Float64Array {
  const n = board.size;
  const length = board.winLength;
  const cells = board.cells;
  const windows = windowsOf(n, length);
  const scores = new Float64Array(cells.length);
  const powers = powersOf(length);
  for (let w = 0; w < windows.length; w += length) {
    let own = 0;
    let theirs = 0;
    for (let k = 0; k < length; k++) {
      const v = cells[windows[w + k]];
      if (v === player) own++;
      else if (v !== EMPTY) theirs++;
    }
    let value: number;
    if (own > 0 && theirs > 0) continue;
    else if (own > 0) value = ATTACK * powers[own];
    else if (theirs > 0) value = DEFEND * powers[theirs];
    else value = 1;
    for (let k = 0; k < length; k++) {
      const cell = windows[w + k];
      if (cells[cell] === EMPTY) scores[cell] += value;
    }
  }
  return scores;
}

const powerCache = new Map<number, Float64Array>();
function powersOf(length: number): Float64Array {
  let p = powerCache.get(length);
  if (!p) {
    p = new Float64Array(length + 1);
    for (let k = 0; k <= length; k++) p[k] = BASE ** k;
    powerCache.set(length, p);
  }
  return p;
}

const windowCache = new Map<number, Int32Array>();
/** Every window of `length` cells on an n×n board, flattened (`length` cell indices each). Cached. */
export function windowsOf(n: number, length: number): Int32Array {
  const key = n * 64 + length;
  const cached = windowCache.get(key);
  if (cached) return cached;
  const out: number[] = [];
  for (const [dr, dc] of DIRECTIONS) {
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) {
        const endR = r + dr * (length - 1);
        const endC = c + dc * (length - 1);
        if (endR < 0 || endR >= n || endC < 0 || endC >= n) continue;
        for (let k = 0; k < length; k++) out.push((r + dr * k) * n + (c + dc * k));
      }
    }
  }
  const windows = Int32Array.from(out);
  windowCache.set(key, windows);
  return windows;
}
