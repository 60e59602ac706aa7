import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * OpenTinker's own pieces (open-tinker/OpenTinker at f87fe25), rewritten in TypeScript so CI keeps
 * their behaviour without their Python code: the game servers `math_server.py` and `gomoku_server.py`
 * (`base_game_server.py` with `MathGame` / `GomokuGame` and their statistics), and the calls its
 * clients make (`GymEnvironmentInteraction`, `StaticDatasetGenerator`, `GameDataGenerator`,
 * `GameStatsClient`). Each line follows the Python it names; `opentinker-upstream.spec.ts` replays
 * answers recorded from the real servers (test/fixtures/opentinker/upstream-f87fe25/) against these.
 *
 * Where the real game draws from Python's `random` (gomoku's opponent, its openings), these draw from
 * a seeded generator; `math_server.py` grades with verl's `default_compute_score` when verl is
 * installed and with `MathGame._simple_match` when it is not (as here).
 */

/** `random`'s calls the games make, seeded. */
export class PyRandom {
  private state: number;
  constructor(seed = 1) {
    this.state = seed >>> 0 || 1;
  }
  /** `random.random()`. */
  random(): number {
    // mulberry32
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** `random.randint(a, b)`, both ends included. */
  randint(a: number, b: number): number {
    return a + Math.floor(this.random() * (b - a + 1));
  }
  choice<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.random() * xs.length)];
  }
  /** `random.sample(xs, k)`. */
  sample<T>(xs: readonly T[], k: number): T[] {
    const pool = [...xs];
    const out: T[] = [];
    for (let i = 0; i < k; i++) out.push(pool.splice(Math.floor(this.random() * pool.length), 1)[0]);
    return out;
  }
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, Json>;

/** `base_game.StepResult`. */
export interface StepResult {
  observation: string;
  reward: number;
  done: boolean;
  info: Obj;
}

/** `base_game.AbstractGame`, the methods `base_game_server.py` calls. */
export interface UpstreamGame {
  reset(kwargs: Obj): string;
  step(action: string): StepResult;
  getSystemPrompt(): string;
  getInitialUserMessage(): string;
  getState(): Obj;
}

/** `math/math_game.py` `MathGame`, grading with `_simple_match` (verl not installed). */
export class MathGame implements UpstreamGame {
  static readonly REWARD_CORRECT = 1.0;
  static readonly REWARD_INCORRECT = 0.0;
  static readonly SYSTEM_PROMPT =
    'You are a helpful assistant that solves math problems step by step. Think through the problem carefully and provide your final answer. Put your final answer in \\boxed{} format.';
  private groundTruth: Json = null;
  private dataSource: Json = 'math';
  private extraInfo: Obj = {};
  private attemptCount = 0;
  private gameOver = false;

  reset(kwargs: Obj): string {
    this.groundTruth = kwargs.ground_truth ?? null;
    this.dataSource = 'data_source' in kwargs ? kwargs.data_source : 'math';
    this.extraInfo = (kwargs.extra_info as Obj | null) || {};
    this.attemptCount = 0;
    this.gameOver = false;
    // "The problem is already in the prompt from data generator"
    return '';
  }

  step(action: string): StepResult {
    if (this.gameOver) return { observation: 'Game already over.', reward: 0.0, done: true, info: { error: 'game_over' } };
    this.attemptCount += 1;
    this.gameOver = true;
    const reward = this.simpleMatch(action);
    const info: Obj = { ground_truth: this.groundTruth, data_source: this.dataSource, attempt: this.attemptCount, solution_str: action, ...this.extraInfo };
    return { observation: '', reward, done: true, info };
  }

  private simpleMatch(solution: string): number {
    if (this.groundTruth === null) return 0.0;
    const boxed = /\\boxed\{([^}]+)\}/.exec(solution);
    const text = (boxed ? boxed[1] : solution).trim().toLowerCase();
    return text.includes(String(this.groundTruth).trim().toLowerCase()) ? MathGame.REWARD_CORRECT : MathGame.REWARD_INCORRECT;
  }

  getSystemPrompt(): string {
    return MathGame.SYSTEM_PROMPT;
  }
  getInitialUserMessage(): string {
    return 'Please solve the following problem:';
  }
  getState(): Obj {
    return { ground_truth: this.groundTruth, data_source: this.dataSource, attempt_count: this.attemptCount, game_over: this.gameOver };
  }
}

const EMPTY = '.';
const DIRECTIONS: Array<[number, number]> = [
  [0, 1],
  [1, 0],
  [1, 1],
  [1, -1],
];

/** `gomoku/gomoku_game.py` `GomokuGame`, with `gomoku_server.py`'s defaults. */
export class GomokuGame implements UpstreamGame {
  static readonly REWARD_WIN = 10.0;
  static readonly REWARD_LOSS = -10.0;
  static readonly REWARD_DRAW = 0.0;
  static readonly REWARD_VALID_MOVE = 0.0;
  static readonly REWARD_INVALID_FORMAT = -1.0;
  static readonly REWARD_INVALID_POSITION = -1.0;
  static readonly MAX_CONSECUTIVE_INVALID_MOVES = 100;
  static readonly REWARD_INVALID_GAME_OVER = -20.0;
  static readonly REWARD_TIMEOUT = -20.0;
  static readonly OPPONENT_RANDOM_PROB = 0.3;

  readonly boardSize: number;
  readonly winLength: number;
  readonly maxTotalSteps: number;
  readonly maxInitialMoves: number;
  readonly emptyBoardProb: number;
  board: string[][] = [];
  private currentPlayer = 'X';
  private moveCount = 0;
  private gameOver = false;
  private winner: string | null = null;
  private lastMove: [number, number] | null = null;
  private consecutiveInvalid = 0;
  private totalSteps = 0;

  constructor(
    options: { board_size?: number; win_length?: number; max_total_steps?: number; max_initial_moves?: number; empty_board_prob?: number } = {},
    private readonly rng = new PyRandom(),
  ) {
    this.boardSize = options.board_size ?? 9;
    this.winLength = Math.min(options.win_length ?? 5, this.boardSize);
    this.maxTotalSteps = options.max_total_steps || 40;
    this.maxInitialMoves = options.max_initial_moves ?? 6;
    this.emptyBoardProb = options.empty_board_prob ?? 0.2;
    this.init();
  }

  private init(): void {
    this.board = Array.from({ length: this.boardSize }, () => Array<string>(this.boardSize).fill(EMPTY));
    this.currentPlayer = 'X';
    this.moveCount = 0;
    this.gameOver = false;
    this.winner = null;
    this.lastMove = null;
    this.consecutiveInvalid = 0;
    this.totalSteps = 0;
  }

  reset(kwargs: Obj): string {
    this.init();
    const moves = kwargs.initial_moves;
    if (Array.isArray(moves) && moves.length > 0) {
      for (const move of moves) {
        // `len(move)` of a number raises: a 500, as upstream.
        if (!Array.isArray(move) && typeof move !== 'string') throw new TypeError(`object of type '${typeof move}' has no len()`);
        if (move.length >= 2) {
          const [row, col] = [Number(move[0]), Number(move[1])];
          if (this.inside(row, col) && this.board[row][col] === EMPTY) {
            this.board[row][col] = this.currentPlayer;
            this.moveCount += 1;
            this.currentPlayer = this.currentPlayer === 'X' ? 'O' : 'X';
          }
        }
      }
    }
    return this.render();
  }

  step(action: string): StepResult {
    if (this.gameOver) return { observation: this.render(), reward: -5.0, done: true, info: { error: 'Game already over' } };
    this.totalSteps += 1;
    if (this.totalSteps >= this.maxTotalSteps) {
      this.gameOver = true;
      return {
        observation: `TIMEOUT: Maximum steps (${this.maxTotalSteps}) reached.\n\n${this.render()}`,
        reward: GomokuGame.REWARD_TIMEOUT,
        done: true,
        info: { error: 'timeout', total_steps: this.totalSteps },
      };
    }
    const m = /<move>\s*(\d+)\s*,\s*(\d+)\s*<\/move>/i.exec(action.trim());
    const [row, col] = m ? [Number(m[1]), Number(m[2])] : [null, null];
    const invalid = this.invalidMove(row, col);
    if (invalid) return invalid;
    this.consecutiveInvalid = 0;
    this.board[row!][col!] = 'X';
    this.moveCount += 1;
    this.lastMove = [row!, col!];
    if (this.wins(row!, col!, 'X')) {
      this.gameOver = true;
      this.winner = 'X';
      return {
        observation: `Congratulations! You win!\n\n${this.render()}`,
        reward: GomokuGame.REWARD_WIN,
        done: true,
        info: { winner: 'X', move: [row!, col!], board_state: this.getState() },
      };
    }
    if (this.moveCount >= this.boardSize * this.boardSize) return this.draw();
    const [er, ec] = this.envMove();
    this.board[er][ec] = 'O';
    this.moveCount += 1;
    if (this.wins(er, ec, 'O')) {
      this.gameOver = true;
      this.winner = 'O';
      return {
        observation: `You lose! Opponent placed O at (${er},${ec}).\n\n${this.render()}`,
        reward: GomokuGame.REWARD_LOSS,
        done: true,
        info: { winner: 'O', env_move: [er, ec] },
      };
    }
    if (this.moveCount >= this.boardSize * this.boardSize) return this.draw();
    return {
      observation: `Opponent placed O at (${er},${ec}).\n\n${this.render()}\n\nYour turn (X). Analyze and provide your move:\n<thinking>your analysis</thinking>\n<move>row,col</move>`,
      reward: GomokuGame.REWARD_VALID_MOVE,
      done: false,
      info: { your_move: [row!, col!], env_move: [er, ec] },
    };
  }

  private draw(): StepResult {
    this.gameOver = true;
    return { observation: `Game is a draw!\n\n${this.render()}`, reward: GomokuGame.REWARD_DRAW, done: true, info: { winner: null, draw: true } };
  }

  private invalidMove(row: number | null, col: number | null): StepResult | null {
    const tooMany = (): StepResult | null => {
      this.consecutiveInvalid += 1;
      if (this.consecutiveInvalid < GomokuGame.MAX_CONSECUTIVE_INVALID_MOVES) return null;
      this.gameOver = true;
      return { observation: 'ERROR: Too many invalid moves. Game over.', reward: GomokuGame.REWARD_INVALID_GAME_OVER, done: true, info: { error: 'max_invalid_moves' } };
    };
    if (row === null || col === null) {
      return (
        tooMany() ?? {
          observation: 'ERROR: Invalid move format.\nUse: <thinking>analysis</thinking><move>row,col</move>',
          reward: GomokuGame.REWARD_INVALID_FORMAT,
          done: false,
          info: { error: 'invalid_format' },
        }
      );
    }
    if (!this.inside(row, col)) {
      return (
        tooMany() ?? {
          observation: `ERROR: Position (${row},${col}) is OUT OF BOUNDS.\nValid range: 0-${this.boardSize - 1}\n\n${this.render()}`,
          reward: GomokuGame.REWARD_INVALID_POSITION,
          done: false,
          info: { error: 'out_of_bounds', row, col },
        }
      );
    }
    if (this.board[row][col] !== EMPTY) {
      return (
        tooMany() ?? {
          observation: `ERROR: Position (${row},${col}) is OCCUPIED.\n\n${this.render()}`,
          reward: GomokuGame.REWARD_INVALID_POSITION,
          done: false,
          info: { error: 'occupied', row, col },
        }
      );
    }
    return null;
  }

  private inside(r: number, c: number): boolean {
    return r >= 0 && r < this.boardSize && c >= 0 && c < this.boardSize;
  }

  private wins(row: number, col: number, player: string, board = this.board): boolean {
    for (const [dr, dc] of DIRECTIONS) {
      let count = 1;
      for (let r = row + dr, c = col + dc; this.inside(r, c) && board[r][c] === player; r += dr, c += dc) count++;
      for (let r = row - dr, c = col - dc; this.inside(r, c) && board[r][c] === player; r -= dr, c -= dc) count++;
      if (count >= this.winLength) return true;
    }
    return false;
  }

  private countFrom(row: number, col: number, dr: number, dc: number, player: string): number {
    let count = 0;
    for (let r = row + dr, c = col + dc; this.inside(r, c) && this.board[r][c] === player; r += dr, c += dc) count++;
    return count;
  }

  /** `_make_env_move`: random with OPPONENT_RANDOM_PROB, else win, else block, else the best line score. */
  private envMove(): [number, number] {
    const empty: Array<[number, number]> = [];
    for (let r = 0; r < this.boardSize; r++) for (let c = 0; c < this.boardSize; c++) if (this.board[r][c] === EMPTY) empty.push([r, c]);
    if (this.rng.random() < GomokuGame.OPPONENT_RANDOM_PROB) return this.rng.choice(empty);
    for (const player of ['O', 'X']) {
      for (const [r, c] of empty) {
        this.board[r][c] = player;
        const wins = this.wins(r, c, player);
        this.board[r][c] = EMPTY;
        if (wins) return [r, c];
      }
    }
    const center = Math.floor(this.boardSize / 2);
    let best: [number, number] | null = null;
    let bestScore = -1;
    for (const [r, c] of empty) {
      let score = 0;
      for (const [dr, dc] of DIRECTIONS) score += this.countFrom(r, c, dr, dc, 'O') + this.countFrom(r, c, -dr, -dc, 'O');
      score += 0.1 / (Math.abs(r - center) + Math.abs(c - center) + 1);
      if (score > bestScore) [bestScore, best] = [score, [r, c]];
    }
    if (best && bestScore > 0) return best;
    const sorted = [...empty].sort((a, b) => Math.abs(a[0] - center) + Math.abs(a[1] - center) - (Math.abs(b[0] - center) + Math.abs(b[1] - center)));
    return this.rng.choice(sorted.slice(0, Math.max(1, Math.floor(sorted.length / 3))));
  }

  render(): string {
    const lines = [`  ${Array.from({ length: this.boardSize }, (_, c) => String(c)).join(' ')}`];
    for (let r = 0; r < this.boardSize; r++) lines.push(`${r} ${this.board[r].join(' ')}`);
    return lines.join('\n');
  }

  getSystemPrompt(): string {
    const center = Math.floor(this.boardSize / 2);
    return (
      `You are playing Gomoku (Five in a Row) on a ${this.boardSize}x${this.boardSize} board.\n` +
      `You play as X. Your goal is to get ${this.winLength} in a row.\n\n` +
      `IMPORTANT: You MUST respond in the following format:\n` +
      `1. First, analyze the board in <thinking></thinking> tags\n` +
      `2. Then, output your move in <move>row,col</move> tags\n\n` +
      `Example: <thinking>I should take the center.</thinking><move>${center},${center}</move>`
    );
  }

  getInitialUserMessage(): string {
    return `Game starts. Here's the board:\n\n${this.render()}\n\nYour turn (X). Provide your thinking and move:`;
  }

  getState(): Obj {
    return {
      board_array: this.board.map((row) => [...row]),
      board_visual: this.render(),
      move_count: this.moveCount,
      last_move: this.lastMove ? [...this.lastMove] : null,
      game_over: this.gameOver,
      winner: this.winner,
    };
  }

  /** `generate_initial_state` (the client's side of training: `GameDataGenerator`). */
  generateInitialState(): { initial_moves: Array<[number, number]> } {
    if (this.rng.random() < this.emptyBoardProb) return { initial_moves: [] };
    const n = this.rng.randint(0, this.maxInitialMoves);
    if (n === 0) return { initial_moves: [] };
    const all: Array<[number, number]> = [];
    for (let r = 0; r < this.boardSize; r++) for (let c = 0; c < this.boardSize; c++) all.push([r, c]);
    const board = Array.from({ length: this.boardSize }, () => Array<string>(this.boardSize).fill(''));
    const moves: Array<[number, number]> = [];
    for (const [i, [r, c]] of this.rng.sample(all, Math.min(n, all.length)).entries()) {
      const player = i % 2 === 0 ? 'X' : 'O';
      board[r][c] = player;
      if (!this.wins(r, c, player, board)) moves.push([r, c]);
      else board[r][c] = '';
    }
    return { initial_moves: moves };
  }

  /** `get_user_message_with_state`: the board the client renders for its prompt (X at even indices). */
  userMessageWithState(initialMoves: Array<[number, number]> = []): string {
    const board = Array.from({ length: this.boardSize }, () => Array<string>(this.boardSize).fill(EMPTY));
    initialMoves.forEach(([r, c], i) => {
      if (this.inside(r, c)) board[r][c] = i % 2 === 0 ? 'X' : 'O';
    });
    const lines = [`  ${Array.from({ length: this.boardSize }, (_, c) => String(c)).join(' ')}`, ...board.map((row, r) => `${r} ${row.join(' ')}`)];
    const text = lines.join('\n');
    return initialMoves.length > 0
      ? `Current board state:\n\n${text}\n\nYour turn (X). Analyze and provide your move:`
      : `Game starts. Here's the empty board:\n\n${text}\n\nYou play first (X). Analyze and provide your move:`;
  }
}

/** `BaseGameStats`, and `GomokuGameStats` (win/loss/draw/timeout rates from the step's info) with `gomoku`. */
class GameStats {
  private step = 0;
  private stepStats = new Map<string, number[]>();
  private cumulative: Record<string, number> = {};
  private gameRewards = new Map<string, { sum: number; steps: number }>();
  private started = new Set<string>();
  constructor(private readonly gomoku: boolean) {}

  private push(key: string, value: number): void {
    this.stepStats.set(key, [...(this.stepStats.get(key) ?? []), value]);
  }
  private add(key: string): void {
    this.cumulative[key] = (this.cumulative[key] ?? 0) + 1;
  }

  registerStart(instanceId: string): void {
    this.started.add(instanceId);
  }

  record(info: Obj, reward: number, done: boolean, instanceId: string): void {
    this.started.add(instanceId);
    const game = this.gameRewards.get(instanceId) ?? { sum: 0, steps: 0 };
    game.sum += reward;
    game.steps += 1;
    this.gameRewards.set(instanceId, game);
    if (done) {
      this.push('game_completed', 1);
      this.push('final_rewards', reward);
      this.push('sum_rewards', game.sum);
      this.push('avg_rewards', game.steps > 0 ? game.sum / game.steps : 0);
      this.push('game_step_counts', game.steps);
      if (this.gomoku) {
        const outcome = info.winner === 'X' ? 'wins' : info.winner === 'O' ? 'losses' : info.draw ? 'draws' : 'timeouts';
        for (const key of ['wins', 'losses', 'draws', 'timeouts']) this.push(key, key === outcome ? 1 : 0);
        this.add({ wins: 'total_wins', losses: 'total_losses', draws: 'total_draws', timeouts: 'total_timeouts' }[outcome]!);
      }
      this.add('total_games');
      this.gameRewards.delete(instanceId);
    }
    this.push('all_step_rewards', reward);
  }

  stepStatsOf(): Obj {
    const get = (k: string) => this.stepStats.get(k) ?? [];
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0.0);
    const completed = get('game_completed').length;
    const total = this.started.size;
    const stats: Obj = {
      step: this.step,
      total_samples: total,
      games_in_step: completed,
      incomplete_samples: this.gameRewards.size,
      completion_rate: total > 0 ? completed / total : 0.0,
    };
    if (this.gomoku) {
      for (const [key, name] of [
        ['wins', 'win_rate'],
        ['losses', 'loss_rate'],
        ['draws', 'draw_rate'],
        ['timeouts', 'timeout_rate'],
      ]) {
        stats[name] = completed > 0 ? get(key).reduce((a, b) => a + b, 0) / completed : 0.0;
      }
    }
    stats.mean_final_reward = mean(get('final_rewards'));
    stats.mean_sum_reward = mean(get('sum_rewards'));
    stats.mean_sum_reward_all = mean([...get('sum_rewards'), ...[...this.gameRewards.values()].map((g) => g.sum)]);
    stats.mean_avg_reward = mean(get('avg_rewards'));
    stats.mean_game_steps = mean(get('game_step_counts'));
    stats.mean_reward = stats.mean_final_reward;
    stats.total_interactions = get('all_step_rewards').length;
    return stats;
  }

  cumulativeStats(): Obj {
    const stats: Obj = { ...this.cumulative };
    const total = this.cumulative.total_games ?? 0;
    if (this.gomoku && total > 0) {
      stats.cumulative_win_rate = (this.cumulative.total_wins ?? 0) / total;
      stats.cumulative_loss_rate = (this.cumulative.total_losses ?? 0) / total;
      stats.cumulative_draw_rate = (this.cumulative.total_draws ?? 0) / total;
    }
    return stats;
  }

  resetStep(): Obj {
    const incomplete = this.gameRewards.size;
    if (incomplete > 0) this.cumulative.total_incomplete = (this.cumulative.total_incomplete ?? 0) + incomplete;
    this.stepStats.clear();
    this.gameRewards.clear();
    this.started.clear();
    this.step += 1;
    return { step: this.step, message: 'Step stats reset', incomplete_cleared: incomplete };
  }

  resetAll(): Obj {
    this.stepStats.clear();
    this.cumulative = {};
    this.gameRewards.clear();
    this.started.clear();
    this.step = 0;
    return { message: 'All stats reset' };
  }
}

/** Pydantic's answer for a field that is not a string. */
const stringType = (field: string, input: Json) => ({ type: 'string_type', loc: ['body', field], msg: 'Input should be a valid string', input });

/** A call one of these servers received. */
export interface UpstreamCall {
  method: string;
  path: string;
  body: unknown;
  /** What the server answered. */
  status?: number;
  answer?: unknown;
}

export interface UpstreamServer {
  url: string;
  /** Every call, in order. */
  calls: UpstreamCall[];
  close(): Promise<void>;
}

export type UpstreamGameName = 'math' | 'gomoku';

/**
 * `create_game_app(game_class, stats_class, **game_kwargs)` of `base_game_server.py` as a node:http
 * server: `math_server.py` (`MathGame(max_retries=0)`, `BaseGameStats`) or `gomoku_server.py`
 * (`GomokuGame(board_size=9, max_total_steps=40, max_initial_moves=6, empty_board_prob=0.2)`,
 * `GomokuGameStats`). Listens on 127.0.0.1 on the given port (0: any free one).
 */
export async function startUpstreamServer(game: UpstreamGameName, options: { port?: number; seed?: number; boardSize?: number } = {}): Promise<UpstreamServer> {
  const rng = new PyRandom(options.seed ?? 1);
  const newGame = (): UpstreamGame => (game === 'math' ? new MathGame() : new GomokuGame({ board_size: options.boardSize ?? 9, max_total_steps: 40 }, rng));
  const games = new Map<string, UpstreamGame>();
  const jobs = new Map<string, GameStats>();
  const stats = (jobId: string) => {
    if (!jobs.has(jobId)) jobs.set(jobId, new GameStats(game === 'gomoku'));
    return jobs.get(jobId)!;
  };
  const calls: UpstreamCall[] = [];

  const routes: Record<string, Record<string, (body: Obj | undefined, query: URLSearchParams) => [number, Json]>> = {
    '/health': { GET: () => [200, { status: 'healthy' }] },
    '/reset': {
      POST: (body) => {
        const { instance_id: instanceId, job_id: jobId, ...kwargs } = body as Obj & { instance_id: string; job_id: string };
        let g = games.get(instanceId);
        if (!g) games.set(instanceId, (g = newGame()));
        const observation = g.reset(kwargs);
        stats(jobId).registerStart(instanceId);
        const initial = g.getInitialUserMessage();
        const answer: Obj = { observation: observation ? `${initial}\n\n${observation}` : initial, system_prompt: g.getSystemPrompt() };
        const state = g.getState();
        if (Object.keys(state).length > 0) answer.game_state = state;
        return [200, answer];
      },
    },
    '/finalize': {
      POST: (body) => {
        const id = body!.instance_id as string;
        if (games.delete(id)) return [200, { message: `Instance ${id} removed` }];
        return [200, { message: `Instance ${id} not found`, status: 'ignored' }];
      },
    },
    '/step': {
      POST: (body) => {
        const { instance_id: id, job_id: jobId, action } = body as { instance_id: string; job_id: string; action: string };
        const g = games.get(id);
        if (!g) return [404, { detail: `Instance ${id} not found. Call /reset first.` }];
        const result = g.step(action);
        stats(jobId).record(result.info, result.reward, result.done, id);
        if (result.done) games.delete(id);
        return [200, { observation: result.observation, reward: result.reward, done: result.done, info: result.info }];
      },
    },
    '/stats': {
      GET: (_b, q) => [
        200,
        { ...stats(q.get('job_id') ?? 'default').stepStatsOf(), ...stats(q.get('job_id') ?? 'default').cumulativeStats(), job_id: q.get('job_id') ?? 'default' },
      ],
    },
    '/stats/step': { GET: (_b, q) => [200, { ...stats(q.get('job_id') ?? 'default').stepStatsOf(), job_id: q.get('job_id') ?? 'default' }] },
    '/stats/cumulative': { GET: (_b, q) => [200, { ...stats(q.get('job_id') ?? 'default').cumulativeStats(), job_id: q.get('job_id') ?? 'default' }] },
    '/stats/reset': { POST: (_b, q) => [200, { ...stats(q.get('job_id') ?? 'default').resetStep(), job_id: q.get('job_id') ?? 'default' }] },
    '/stats/reset_all': {
      POST: (_b, q) => {
        const jobId = q.get('job_id');
        if (jobId !== null) return [200, { ...stats(jobId).resetAll(), job_id: jobId }];
        const n = jobs.size;
        jobs.clear();
        return [200, { message: `All stats reset for ${n} jobs`, jobs_cleared: n }];
      },
    },
    '/stats/jobs': { GET: () => [200, { jobs: [...jobs.keys()], count: jobs.size }] },
  };
  /** The pydantic model of each body: its string fields and their defaults (ResetRequest allows extra keys). */
  const models: Record<string, Record<string, string>> = {
    '/reset': { instance_id: 'default', job_id: 'default' },
    '/finalize': { instance_id: 'default', job_id: 'default' },
    '/step': { instance_id: 'default', job_id: 'default', action: '' },
  };

  const handle = (req: IncomingMessage, raw: string): [number, Json | string] => {
    const url = new URL(req.url ?? '/', 'http://x');
    const job = /^\/stats\/job\/([^/]+)$/.exec(url.pathname);
    if (job) {
      if (req.method !== 'DELETE') return [405, { detail: 'Method Not Allowed' }];
      const id = decodeURIComponent(job[1]);
      if (!jobs.delete(id)) return [404, { detail: `Job ${id} not found` }];
      return [200, { message: `Statistics for job ${id} removed`, job_id: id }];
    }
    const route = routes[url.pathname];
    if (!route) return [404, { detail: 'Not Found' }];
    const handler = route[req.method ?? 'GET'];
    if (!handler) return [405, { detail: 'Method Not Allowed' }];
    const model = models[url.pathname];
    let body: Obj | undefined;
    if (model) {
      if (raw === '') return [422, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] }];
      let value: Json;
      if (!/json/i.test(req.headers['content-type'] ?? '')) value = raw;
      else {
        try {
          value = JSON.parse(raw) as Json;
        } catch {
          return [422, { detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }] }];
        }
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return [422, { detail: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: value }] }];
      }
      const errors = Object.keys(model)
        .filter((k) => k in value && typeof (value as Obj)[k] !== 'string')
        .map((k) => stringType(k, (value as Obj)[k]));
      if (errors.length) return [422, { detail: errors }];
      const fields = Object.fromEntries(Object.entries(model).map(([k, d]) => [k, (value as Obj)[k] ?? d]));
      // Only ResetRequest keeps extra keys (`class Config: extra = "allow"`).
      body = url.pathname === '/reset' ? { ...(value as Obj), ...fields } : fields;
    }
    try {
      return handler(body, url.searchParams);
    } catch {
      // An exception in the game: Starlette's plain-text 500.
      return [500, 'Internal Server Error'];
    }
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown = raw;
      try {
        parsed = raw ? JSON.parse(raw) : undefined;
      } catch {
        // recorded as text
      }
      const [status, answer] = handle(req, raw);
      calls.push({ method: req.method ?? 'GET', path: req.url ?? '/', body: parsed, status, answer });
      if (typeof answer === 'string') {
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(answer);
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, calls, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A sample as OpenTinker's data generators make it: the prompt the model sees, and the env kwargs `/reset` gets. */
export interface UpstreamSample {
  prompt: Array<{ role: string; content: string }>;
  env_kwargs: Obj;
  data_source: string;
}

/**
 * `StaticDatasetGenerator.generate_sample` (`prompt_key='prompt'`, `ground_truth_key='ground_truth'`),
 * with the game's system prompt as `math_env.py` and `inference_pipeline.load_samples` give it.
 */
export function staticDatasetSample(row: Obj, options: { interactionName?: string; systemPrompt?: string | null } = {}): UpstreamSample {
  let prompt = (row.prompt ?? []) as Json;
  if (!Array.isArray(prompt)) prompt = [{ role: 'user', content: String(prompt) }];
  let messages = prompt as Array<{ role: string; content: string }>;
  const system = options.systemPrompt === undefined ? MathGame.SYSTEM_PROMPT : options.systemPrompt;
  if (system && (messages.length === 0 || messages[0].role !== 'system')) messages = [{ role: 'system', content: system }, ...messages];
  const env: Obj = {};
  const reward = row.reward_model as Obj | undefined;
  const extra = row.extra_info as Obj | undefined;
  if ('ground_truth' in row) env.ground_truth = row.ground_truth;
  else if (reward && typeof reward === 'object' && 'ground_truth' in reward) env.ground_truth = reward.ground_truth;
  else if (extra && typeof extra === 'object' && 'ground_truth' in extra) env.ground_truth = extra.ground_truth;
  if ('extra_info' in row) env.extra_info = row.extra_info;
  const dataSource = 'data_source' in row ? (row.data_source as string) : (options.interactionName ?? 'math');
  env.data_source = dataSource;
  return { prompt: messages, env_kwargs: env, data_source: dataSource };
}

/** `GameDataGenerator(GomokuGame, …).generate_sample`: the client-side game draws the start and renders the prompt. */
export function gomokuSample(game: GomokuGame): UpstreamSample {
  const state = game.generateInitialState();
  return {
    prompt: [
      { role: 'system', content: game.getSystemPrompt() },
      { role: 'user', content: game.userMessageWithState(state.initial_moves) },
    ],
    env_kwargs: state as unknown as Obj,
    data_source: 'gomoku',
  };
}

/** What `_call_env_reset` / `_call_env_step` raise on an answer that is not 200. */
export class UpstreamClientError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly text: string,
  ) {
    super(message);
  }
}

/**
 * The calls of `GymEnvironmentInteraction` (the trainer's agent loop; `inference_pipeline`'s client
 * makes the same) and `GameStatsClient`. `start` resets an instance (`uuid4().hex` when none is given)
 * with the sample's env kwargs; the model's messages are the sample's prompt plus each step's
 * observation, as `GenericAgentLoop` builds them: the reset's observation is kept but never shown.
 * `finalize` frees nothing on the server (upstream's `finalize_interaction` only drops its own record).
 */
export class UpstreamClient {
  constructor(
    readonly endpoint: string,
    readonly jobId = 'default',
  ) {}

  /** aiohttp's `session.post(url, json=body)`; without a body, `requests.post(url, params=…)` (no content type). */
  private async post(path: string, body: unknown, what: string): Promise<Obj> {
    const init = body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    const res = await fetch(this.endpoint + path, { method: 'POST', ...init });
    const text = await res.text();
    if (res.status !== 200) throw new UpstreamClientError(`Environment ${what} failed: ${text}`, res.status, text);
    return JSON.parse(text) as Obj;
  }

  /** `start_interaction(instance_id, env_kwargs=…)`: returns the instance id and the reset's observation (not shown to the model). */
  async start(envKwargs: Obj, instanceId: string = randomUUID().replace(/-/g, '')): Promise<{ instanceId: string; observation: string; answer: Obj }> {
    const answer = await this.post('/reset', { instance_id: instanceId, job_id: this.jobId, ...envKwargs }, 'reset');
    return { instanceId, observation: String(answer.observation ?? ''), answer };
  }

  /** `generate_response`'s `_call_env_step`: the observation, reward, done and info, read as upstream reads them. */
  async step(instanceId: string, action: string): Promise<StepResult> {
    const d = await this.post('/step', { instance_id: instanceId, job_id: this.jobId, action }, 'step');
    return { observation: String(d.observation ?? ''), reward: Number(d.reward ?? 0), done: Boolean(d.done ?? false), info: (d.info as Obj) ?? {} };
  }

  /** `GameStatsClient`. */
  async health(): Promise<boolean> {
    const res = await fetch(`${this.endpoint}/health`).catch(() => null);
    return res?.status === 200;
  }
  async resetAll(): Promise<Obj> {
    return this.post(`/stats/reset_all?job_id=${encodeURIComponent(this.jobId)}`, undefined, 'stats reset_all');
  }
  async resetStep(): Promise<Obj> {
    return this.post(`/stats/reset?job_id=${encodeURIComponent(this.jobId)}`, undefined, 'stats reset');
  }
  async stepStats(): Promise<Obj> {
    const res = await fetch(`${this.endpoint}/stats/step?job_id=${encodeURIComponent(this.jobId)}`);
    return (await res.json()) as Obj;
  }

  /**
   * One episode as `GenericAgentLoop` plays it with a scripted policy: the model sees the sample's
   * prompt, then each non-final step's observation as a user message. Returns what it saw and got.
   */
  async play(
    sample: UpstreamSample,
    policy: (messages: Array<{ role: string; content: string }>) => string,
    maxTurns = 40,
  ): Promise<{ messages: Array<{ role: string; content: string }>; rewards: number[]; done: boolean; infos: Obj[] }> {
    const { instanceId } = await this.start(sample.env_kwargs);
    const messages = sample.prompt.map((m) => ({ ...m }));
    const rewards: number[] = [];
    const infos: Obj[] = [];
    let done = false;
    for (let turn = 0; turn < maxTurns && !done; turn++) {
      const action = policy(messages);
      messages.push({ role: 'assistant', content: action });
      const r = await this.step(instanceId, action);
      rewards.push(r.reward);
      infos.push(r.info);
      done = r.done;
      if (!done) messages.push({ role: 'user', content: r.observation });
    }
    return { messages, rewards, done, infos };
  }
}
