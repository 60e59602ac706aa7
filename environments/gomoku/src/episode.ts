import { createRng, EnvironmentError, type Episode, type Message, type RatedResult, type Rng, type StepInfo, type StepResult } from '@opentinker/env-sdk';
import { Board, O, other, X } from './board';
import type { GomokuConfig } from './config';
import { parseMove, type MoveErrorKind } from './move';
import { greedyMove, opponentMove } from './opponent';
import { COMPACT_MOVE_REQUEST, MOVE_REQUEST, ordinal, systemPrompt } from './prompt';
import { formatCell, renderBoard, renderCompactBoard } from './render';
import { firstPlayer, readTask, type GomokuTask } from './tasks';

/** How a finished game ended, from the model's (X's) side. */
export type GomokuResult = RatedResult | 'timeout' | 'invalid';

/**
 * What every step's `info` carries. `result` and `winner` are standard fields (see `StandardInfo`): the
 * trainer reports win/loss/draw rates from `result`, and inference results carry both.
 *
 * - `winner`: `'x'` or `'o'` when a line was completed, `'draw'` for a full board, `null` while the
 *   game runs and when it ended by timeout or invalid moves.
 * - `result`: `null` while running, then how it ended (`timeout` and `invalid` count as neither a win,
 *   a loss nor a draw).
 * - `moves`: stones played in this game by both sides (opening stones not included);
 *   `model_moves`, `opponent_moves`, `opening_moves` split it up.
 * - `invalid_moves`: invalid replies so far; `turns`: model replies so far (valid or not).
 * - `move`: the model's move this step as `[row, col]` (null if invalid); `opponent_move`: the
 *   opponent's answer (null if none); `error`: why this step's move was invalid, else null.
 * - `hint` (only with `task_hints`, only while the game continues): the greedy heuristic's move for X
 *   in the position it is now to move in, as `"row,col"`: a per-turn demonstration for a scripted SFT
 *   warm-up (`sft.turns: ['{hint}', '{info.hint}']` with `sft.turns_repeat_last`).
 */
export type GomokuInfo = StepInfo & {
  winner: 'x' | 'o' | 'draw' | null;
  result: GomokuResult | null;
  moves: number;
  model_moves: number;
  opponent_moves: number;
  opening_moves: number;
  invalid_moves: number;
  turns: number;
  move: [number, number] | null;
  opponent_move: [number, number] | null;
  error: MoveErrorKind | null;
};

type State = 'new' | 'open' | 'done' | 'closed';

/**
 * One game against the built-in opponent. The model plays X. A valid move is answered by the
 * opponent's move in the same step; an invalid one by an error observation, the invalid-move penalty
 * and a new request, until `max_invalid_moves` of them end the game.
 */
export class GomokuEpisode implements Episode<GomokuTask> {
  private state: State = 'new';
  private board!: Board;
  private rng!: Rng;
  /** Breaks the hints' ties; its own stream, so hints leave the opponent's moves as they would be without them. */
  private hintRng!: Rng;
  private readonly maxTurns: number;
  private turns = 0;
  private modelMoves = 0;
  private opponentMoves = 0;
  private openingMoves = 0;
  private invalidMoves = 0;
  private lastOpponent = -1;
  private winner: GomokuInfo['winner'] = null;
  private result: GomokuResult | null = null;

  constructor(private readonly config: GomokuConfig) {
    this.maxTurns = config.max_turns ?? config.board_size * config.board_size;
  }

  reset(task: GomokuTask, seed: number): Message[] {
    if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'This episode is closed');
    this.state = 'new';
    const config = this.config;
    const { opening, form } = readTask(task, config);
    const board = new Board({ size: config.board_size, winLength: config.win_length, allowOverline: config.allow_overline });
    // OpenTinker's initial_moves: X first, and X to move after them whatever their count.
    let player = form === 'initial_moves' ? X : firstPlayer(config);
    for (const cell of opening) {
      board.place(cell, player);
      if (board.wins(cell, player)) {
        throw new EnvironmentError('ENV_INVALID_TASK', `task.${form} completes a line at ${formatCell(board, cell)}: the game would be over before it starts`, `task.${form}`);
      }
      player = other(player);
    }
    if (form === 'initial_moves') player = X;
    this.board = board;
    this.rng = createRng(seed);
    this.hintRng = createRng(seed ^ 0x68696e74);
    this.turns = 0;
    this.modelMoves = 0;
    this.opponentMoves = 0;
    this.openingMoves = opening.length;
    this.invalidMoves = 0;
    this.lastOpponent = -1;
    this.winner = null;
    this.result = null;

    if (config.prompt_style === 'compact') {
      if (player === O) this.opponentOpens(board);
      this.state = 'open';
      return [{ role: 'user', content: this.compactBoard() }];
    }
    const lines: string[] = [`A new game on a ${config.board_size}×${config.board_size} board: ${config.win_length} in a row wins. You are X.`];
    if (opening.length > 0) lines.push(`The game starts from an opening of ${opening.length} stone${opening.length === 1 ? '' : 's'} already on the board.`);
    if (player === O) {
      const cell = this.opponentOpens(board);
      lines.push(`The opponent (O) moved first and played ${formatCell(board, cell)}.`);
    } else if (opening.length === 0) {
      lines.push('You move first.');
    }
    this.state = 'open';
    lines.push('', renderBoard(board, this.lastOpponent < 0 ? null : this.lastOpponent), '', MOVE_REQUEST);
    return [
      { role: 'system', content: systemPrompt(config) },
      { role: 'user', content: lines.join('\n') },
    ];
  }

  step(action: string): StepResult {
    if (this.state !== 'open') {
      if (this.state === 'new') throw new EnvironmentError('ENV_NOT_RESET', 'Call reset(task, seed) before step');
      if (this.state === 'closed') throw new EnvironmentError('ENV_EPISODE_CLOSED', 'This episode is closed');
      throw new EnvironmentError('ENV_STEP_AFTER_DONE', `The game is over (${this.result})`);
    }
    const { board, config } = this;
    const rewards = config.rewards;
    this.turns++;

    const parsed = parseMove(action, board.size, config.move_format);
    const cell = parsed.ok ? board.index(parsed.row, parsed.col) : -1;
    if (!parsed.ok || board.cells[cell] !== 0) {
      this.invalidMoves++;
      const error: MoveErrorKind = parsed.ok ? 'occupied' : parsed.error;
      if (this.invalidMoves >= config.max_invalid_moves) return this.finish('invalid', null, rewards.invalid_game_over, null, null, error);
      if (this.turns >= this.maxTurns) return this.finish('timeout', null, rewards.timeout, null, null, error);
      return {
        observation: this.invalidObservation(parsed, cell),
        reward: rewards.invalid_move,
        done: false,
        info: this.info(null, null, error),
      };
    }

    board.place(cell, X);
    this.modelMoves++;
    const move = this.pair(cell);
    if (board.wins(cell, X)) return this.finish('win', 'x', rewards.win, move, null, null);
    if (board.isFull()) return this.finish('draw', 'draw', rewards.draw, move, null, null);

    const reply = opponentMove(config.opponent, board, O, this.rng);
    board.place(reply, O);
    this.opponentMoves++;
    this.lastOpponent = reply;
    const replyPair = this.pair(reply);
    if (board.wins(reply, O)) return this.finish('loss', 'o', rewards.loss, move, replyPair, null);
    if (board.isFull()) return this.finish('draw', 'draw', rewards.draw, move, replyPair, null);
    if (this.turns >= this.maxTurns) return this.finish('timeout', null, rewards.timeout, move, replyPair, null);

    return {
      observation:
        config.prompt_style === 'compact'
          ? this.compactBoard()
          : `You played ${formatCell(board, cell)}. The opponent played ${formatCell(board, reply)}.\n\n${renderBoard(board, reply)}\n\n${MOVE_REQUEST}`,
      reward: rewards.move,
      done: false,
      info: this.info(move, replyPair, null),
    };
  }

  close(): void {
    this.state = 'closed';
  }

  private finish(
    result: GomokuResult,
    winner: GomokuInfo['winner'],
    reward: number,
    move: [number, number] | null,
    reply: [number, number] | null,
    error: MoveErrorKind | null,
  ): StepResult {
    this.state = 'done';
    this.result = result;
    this.winner = winner;
    return { observation: '', reward, done: true, info: this.info(move, reply, error) };
  }

  private info(move: [number, number] | null, reply: [number, number] | null, error: MoveErrorKind | null): GomokuInfo {
    return {
      winner: this.winner,
      result: this.result,
      moves: this.modelMoves + this.opponentMoves,
      model_moves: this.modelMoves,
      opponent_moves: this.opponentMoves,
      opening_moves: this.openingMoves,
      invalid_moves: this.invalidMoves,
      turns: this.turns,
      move,
      opponent_move: reply,
      error,
      ...(this.config.task_hints && this.result === null ? { hint: this.hint() } : {}),
    };
  }

  /** The greedy heuristic's move for X on the current board, as "row,col" (the task hint's format). */
  private hint(): string {
    const [row, col] = this.pair(greedyMove(this.board, X, this.hintRng));
    return `${row},${col}`;
  }

  /** O's stone when O is to move at the start (`model_first: false`, or an odd opening); returns its cell. */
  private opponentOpens(board: Board): number {
    const cell = opponentMove(this.config.opponent, board, O, this.rng);
    board.place(cell, O);
    if (board.wins(cell, O)) {
      throw new EnvironmentError('ENV_INVALID_TASK', 'task.opening leaves the opponent a win on its first move', 'task.opening');
    }
    this.opponentMoves = 1;
    this.lastOpponent = cell;
    return cell;
  }

  /** A compact observation: the bare board, then the request (see {@link renderCompactBoard}). */
  private compactBoard(): string {
    return `${renderCompactBoard(this.board)}\n${COMPACT_MOVE_REQUEST}`;
  }

  private pair(cell: number): [number, number] {
    const row = (cell / this.board.size) | 0;
    return [row, cell - row * this.board.size];
  }

  private invalidObservation(parsed: ReturnType<typeof parseMove>, cell: number): string {
    const board = this.board;
    // Compact: the reason in a word, then the board and the request, which stay last so every cell
    // keeps its distance from the reply.
    if (this.config.prompt_style === 'compact') return `invalid (${parsed.ok ? 'occupied' : parsed.error})\n${this.compactBoard()}`;
    const last = board.size - 1;
    let why: string;
    if (parsed.ok) {
      const owner = board.cells[cell] === X ? 'X (your stone)' : "O (the opponent's stone)";
      why = `(${parsed.row}, ${parsed.col}) is already taken by ${owner}. Choose an empty cell, shown as '.'.`;
    } else if (parsed.error === 'missing_tag') {
      why = 'your reply has no <move>row,col</move> tag (outside <think>…</think> and code).';
    } else if (parsed.error === 'unparsable') {
      const shown = parsed.content.length > 40 ? `${parsed.content.slice(0, 40)}…` : parsed.content;
      why = `${JSON.stringify(shown)} is not a move. Write the row and the column as two numbers separated by a comma, like <move>${last >> 1},${last >> 1}</move>.`;
    } else {
      why = `(${parsed.row}, ${parsed.col}) is off the board: rows and columns go from 0 to ${last}.`;
    }
    const left = this.config.max_invalid_moves - this.invalidMoves;
    const warning =
      left === 1
        ? `This is invalid move ${this.invalidMoves}; one more ends the game.`
        : `This is invalid move ${this.invalidMoves}; the game ends at the ${ordinal(this.config.max_invalid_moves)}.`;
    return `Invalid move: ${why} ${warning}\n\n${renderBoard(board, this.lastOpponent < 0 ? null : this.lastOpponent)}\n\n${MOVE_REQUEST}`;
  }
}
