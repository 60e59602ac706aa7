import { parseConfig, type StepResult } from '@opentinker/env-sdk';
import gomoku from './index';
import { GomokuEpisode, type GomokuInfo } from './episode';
import type { GomokuConfigInput } from './config';
import type { GomokuTask } from './tasks';

function start(config: GomokuConfigInput = {}, task: GomokuTask = { index: 0 }, seed = 1) {
  const episode = new GomokuEpisode(parseConfig(gomoku, config));
  const messages = episode.reset(task, seed);
  return { episode, messages };
}
const info = (r: StepResult) => r.info as GomokuInfo & { hint?: string };
const move = (r: number, c: number) => `<move>${r},${c}</move>`;

/** X four in a row on row 0 (cols 0..3), O scattered on row 8: X to move. */
const X_FOUR: GomokuTask = {
  index: 0,
  opening: [
    [0, 0],
    [8, 8],
    [0, 1],
    [8, 6],
    [0, 2],
    [8, 4],
    [0, 3],
    [8, 2],
  ],
};
/** O four in a row on row 8 (cols 0..3), X scattered: X to move, O wins next unless blocked. */
const O_FOUR: GomokuTask = {
  index: 0,
  opening: [
    [0, 8],
    [8, 0],
    [0, 6],
    [8, 1],
    [0, 4],
    [8, 2],
    [2, 2],
    [8, 3],
  ],
};
/** 5×5 opening where every row, column and diagonal holds both colours: the game must be drawn. */
const DEAD_5X5: GomokuTask = {
  index: 0,
  opening: [
    [0, 3],
    [2, 4],
    [1, 2],
    [1, 0],
    [3, 4],
    [3, 3],
    [1, 1],
    [4, 1],
    [4, 0],
    [0, 2],
    [2, 1],
    [1, 3],
  ],
};

describe('first messages', () => {
  it('a system prompt with the rules and the 0-based convention, then the empty board', () => {
    const { messages } = start();
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0].content).toContain('0-based');
    expect(messages[0].content).toContain('<move>row,col</move>');
    expect(messages[0].content).toContain('A line longer than 5 also wins');
    expect(messages[1].content).toContain('You move first');
    expect(messages[1].content).toContain('   0  1  2  3  4  5  6  7  8\n0  .  .  .');
    expect(messages[1].content).not.toContain('[');
  });

  it('states the exactly-N rule when overlines are disallowed', () => {
    expect(start({ allow_overline: false, win_length: 4 }).messages[0].content).toContain('Only a line of exactly 4 wins');
  });

  it('model_first false: the opponent has already played, shown in brackets', () => {
    const { messages, episode } = start({ model_first: false, opponent: 'greedy' });
    expect(messages[1].content).toContain('The opponent (O) moved first and played (4, 4)');
    expect(messages[1].content).toContain('4  .  .  .  . [O] .  .  .  .');
    const r = episode.step(move(0, 0));
    expect(info(r)).toMatchObject({ model_moves: 1, opponent_moves: 2, moves: 3, turns: 1 });
  });

  it('openings are played in turn order from the first mover', () => {
    const { messages } = start(
      {},
      {
        index: 0,
        opening: [
          [0, 0],
          [1, 1],
          [2, 2],
        ],
      },
    );
    expect(messages[1].content).toContain('opening of 3 stones');
    // X, O, X placed; O to move, so the opponent has answered already.
    expect(messages[1].content).toContain('0  X  .');
    expect(messages[1].content).toContain('1  .  O');
    expect(messages[1].content).toContain('2  .  .  X');
    expect(messages[1].content).toMatch(/\[O\]/);
  });

  it("OpenTinker's initial_moves: X first, then O, and X moves next whatever their count", () => {
    const stones: Array<[number, number]> = [
      [4, 4],
      [3, 3],
      [4, 5],
    ];
    // model_first false does not apply: OpenTinker's game always gives X the move after them.
    for (const config of [{}, { model_first: false }]) {
      const { messages, episode } = start(config, { index: 0, initial_moves: stones });
      expect(messages[1].content).toContain('opening of 3 stones');
      expect(messages[1].content).toContain('3  .  .  .  O  .');
      expect(messages[1].content).toContain('4  .  .  .  .  X  X  .');
      expect(messages[1].content).not.toMatch(/\[O\]/);
      const r = episode.step(move(4, 6));
      expect(info(r)).toMatchObject({ opening_moves: 3, model_moves: 1, opponent_moves: 1, move: [4, 6] });
    }
    expect(start({}, { index: 0, initial_moves: [] }).messages[1].content).toContain('You move first.');
  });
});

describe('results and rewards', () => {
  it('win: completing five gives +10, winner x, result win, empty observation', () => {
    const { episode } = start({}, X_FOUR);
    const r = episode.step('Completing the row: <move>0,4</move>');
    expect(r).toMatchObject({ reward: 10, done: true, observation: '' });
    expect(info(r)).toEqual({
      winner: 'x',
      result: 'win',
      moves: 1,
      model_moves: 1,
      opponent_moves: 0,
      opening_moves: 8,
      invalid_moves: 0,
      turns: 1,
      move: [0, 4],
      opponent_move: null,
      error: null,
    });
    expect(() => episode.step(move(1, 1))).toThrow(expect.objectContaining({ code: 'ENV_STEP_AFTER_DONE' }));
  });

  it('loss: the greedy opponent completes its four → −10, winner o', () => {
    const { episode } = start({ opponent: 'greedy' }, O_FOUR);
    const r = episode.step(move(4, 4));
    expect(r).toMatchObject({ reward: -10, done: true });
    expect(info(r)).toMatchObject({ winner: 'o', result: 'loss', move: [4, 4], opponent_move: [8, 4], moves: 2 });
  });

  it('blocking keeps the game going; the greedy opponent then blocks our four', () => {
    const { episode } = start({ opponent: 'greedy' }, O_FOUR);
    const r = episode.step(move(8, 4));
    expect(r.done).toBe(false);
    expect(r.reward).toBe(0);
    expect(r.observation).toContain('You played (8, 4). The opponent played');
    expect(info(r).winner).toBeNull();
    expect(info(r).result).toBeNull();
  });

  it('rewards are configurable, missing keys keep their defaults', () => {
    const win = start({ rewards: { win: 1 } }, X_FOUR).episode.step(move(0, 4));
    expect(win.reward).toBe(1);
    const loss = start({ opponent: 'greedy', rewards: { win: 1 } }, O_FOUR).episode.step(move(4, 4));
    expect(loss.reward).toBe(-10);
    expect(parseConfig(gomoku, { rewards: { draw: 0.5 } }).rewards).toEqual({ win: 10, loss: -10, draw: 0.5, invalid_move: -1, invalid_game_over: -20, timeout: -20, move: 0 });
  });

  it('rewards.move: each valid move that does not end the game earns it (0 by default), the last move earns the result only', async () => {
    expect((await start().episode.step(move(4, 4))).reward).toBe(0);
    const { episode } = start({ rewards: { move: 0.1, invalid_move: -2 } });
    expect((await episode.step(move(4, 4))).reward).toBe(0.1);
    expect((await episode.step('pass')).reward).toBe(-2);
    expect((await start({ rewards: { move: 0.1, win: 1 } }, X_FOUR).episode.step(move(0, 4))).reward).toBe(1);
  });

  it.each([
    ['model', true],
    ['opponent', false],
  ])('draw on a full 5×5 board, last stone by the %s: the draw reward, winner draw', (_who, modelFirst) => {
    for (const opponent of ['random', 'greedy'] as const) {
      for (let seed = 0; seed < 5; seed++) {
        const { episode, messages } = start({ board_size: 5, opponent, model_first: modelFirst, rewards: { draw: 0.25 } }, DEAD_5X5, seed);
        let text = messages[1].content;
        let r: StepResult | undefined;
        for (let turn = 0; turn < 20 && !r?.done; turn++) {
          // First empty cell of the rendered board.
          const rows = text.split('\n').filter((l) => /^\d /.test(l));
          const row = rows.findIndex((l) =>
            l
              .slice(2)
              .match(/.{1,3}/g)!
              .some((c) => c.trim() === '.'),
          );
          const col = rows[row]
            .slice(2)
            .match(/.{1,3}/g)!
            .findIndex((c) => c.trim() === '.');
          r = episode.step(move(row, col));
          text = r.observation;
        }
        expect(r).toMatchObject({ done: true, reward: 0.25 });
        expect(info(r!)).toMatchObject({ winner: 'draw', result: 'draw', moves: 13, opening_moves: 12, invalid_moves: 0 });
        expect(info(r!).opponent_move === null).toBe(modelFirst); // with the model first, the model fills the last cell
      }
    }
  });
});

describe('overlines through the episode', () => {
  // X: row 0 cols 0..3 and col 5; playing (0,4) makes six.
  const SIX: GomokuTask = {
    index: 0,
    opening: [
      [0, 0],
      [8, 8],
      [0, 1],
      [8, 6],
      [0, 2],
      [8, 4],
      [0, 3],
      [8, 2],
      [0, 5],
      [6, 0],
    ],
  };

  it('allow_overline true: six in a row wins', () => {
    expect(start({ allow_overline: true }, SIX).episode.step(move(0, 4))).toMatchObject({ done: true, reward: 10 });
  });

  it('allow_overline false: six in a row does not win, the game goes on', () => {
    const r = start({ allow_overline: false }, SIX).episode.step(move(0, 4));
    expect(r).toMatchObject({ done: false, reward: 0 });
    expect(info(r).winner).toBeNull();
  });

  it('allow_overline false: exactly five still wins', () => {
    expect(start({ allow_overline: false }, X_FOUR).episode.step(move(0, 4))).toMatchObject({ done: true, reward: 10 });
  });
});

describe('invalid moves', () => {
  const cases: Array<[string, string, string, string]> = [
    ['occupied by the opponent', '<move>4,4</move>', 'occupied', "(4, 4) is already taken by O (the opponent's stone)"],
    ['occupied by the model', '<move>3,3</move>', 'occupied', '(3, 3) is already taken by X (your stone)'],
    ['off the board', '<move>9,2</move>', 'out_of_range', '(9, 2) is off the board: rows and columns go from 0 to 8'],
    ['negative', '<move>-1,0</move>', 'out_of_range', 'off the board'],
    ['unparsable', '<move>e5</move>', 'unparsable', '"e5" is not a move'],
    ['no tag', 'I would play 4,4', 'missing_tag', 'no <move>row,col</move> tag'],
    ['several tags, the last invalid', '<move>0,0</move> hmm, <move>4,4</move>', 'occupied', '(4, 4) is already taken'],
  ];

  it.each(cases)('%s: −1, an error observation saying what is wrong, the same board, asked again', (_name, action, error, says) => {
    // X at (3,3), O at (4,4) from the opening; X to move.
    const { episode } = start(
      {},
      {
        index: 0,
        opening: [
          [3, 3],
          [4, 4],
        ],
      },
    );
    const r = episode.step(action);
    expect(r.reward).toBe(-1);
    expect(r.done).toBe(false);
    expect(r.observation).toContain('Invalid move: ');
    expect(r.observation).toContain(says);
    expect(r.observation).toContain('This is invalid move 1; the game ends at the 3rd.');
    expect(r.observation).toContain('3  .  .  .  X');
    expect(r.observation).toContain('Your move: reply with <move>row,col</move>.');
    expect(info(r)).toMatchObject({ error, invalid_moves: 1, model_moves: 0, opponent_moves: 0, turns: 1, move: null, result: null });
    // The episode goes on: a valid move now is played.
    const next = episode.step(move(0, 0));
    expect(info(next)).toMatchObject({ error: null, invalid_moves: 1, model_moves: 1, turns: 2 });
  });

  it('several tags: the last one counts, even when an earlier one is invalid', () => {
    const r = start().episode.step('<move>99,99</move> no: <move>2,3</move>');
    expect(info(r)).toMatchObject({ error: null, move: [2, 3] });
  });

  it('a reply places one stone, whatever it holds: several tags, a move in code or a thought', () => {
    const { episode } = start({ opponent: 'greedy' });
    const r = episode.step('<move>0,0</move><move>1,1</move>\n```\n<move>2,2</move>\n```\n<think><move>3,3</move></think>');
    expect(info(r)).toMatchObject({ error: null, move: [1, 1], model_moves: 1, opponent_moves: 1, moves: 2 });
    const quoted = episode.step('Reply like `<move>4,0</move>`; <think>I play <move>5,5</move>');
    expect(quoted.observation).toContain('no <move>row,col</move> tag (outside <think>…</think> and code)');
    expect(info(quoted)).toMatchObject({ error: 'missing_tag', model_moves: 1, invalid_moves: 1 });
  });

  it('the max_invalid_moves-th invalid move ends the game with the invalid_game_over penalty', () => {
    const { episode } = start({ rewards: { invalid_move: -2 } });
    expect(episode.step('nothing').reward).toBe(-2);
    const second = episode.step('<move>x</move>');
    expect(second.observation).toContain('This is invalid move 2; one more ends the game.');
    expect(episode.step(move(4, 4)).done).toBe(false); // a valid move in between does not reset the count
    const last = episode.step('<move>4,4</move>');
    expect(last).toMatchObject({ done: true, reward: -20, observation: '' });
    expect(info(last)).toMatchObject({ result: 'invalid', winner: null, invalid_moves: 3, error: 'occupied', turns: 4 });
  });

  it('max_invalid_moves 1: the first invalid move ends the game', () => {
    const r = start({ max_invalid_moves: 1 }).episode.step('');
    expect(r).toMatchObject({ done: true, reward: -20 });
    expect(info(r).result).toBe('invalid');
  });

  it('under the default rewards, forfeiting with invalid moves costs more than losing (OpenTinker: -1 each, -20 for the last)', async () => {
    const { episode } = start();
    const forfeit = [episode.step('a'), episode.step('b'), episode.step('c')];
    expect(forfeit.map((r) => r.reward)).toEqual([-1, -1, -20]);
    expect(forfeit.reduce((sum, r) => sum + r.reward, 0)).toBeLessThan(start({ opponent: 'greedy' }, O_FOUR).episode.step(move(4, 4)).reward);
  });

  it('refuses rewards under which forfeiting with invalid moves pays better than a loss', () => {
    const refused = (config: GomokuConfigInput) => expect(() => parseConfig(gomoku, config)).toThrow(/more than a loss/);
    refused({ rewards: { invalid_game_over: -5 } });
    refused({ rewards: { loss: -30 } });
    refused({ max_invalid_moves: 100, rewards: { invalid_move: 0.5 } });
    expect(parseConfig(gomoku, { rewards: { loss: -30, invalid_game_over: -30 } }).rewards.loss).toBe(-30);
    expect(parseConfig(gomoku, { max_invalid_moves: 1, rewards: { invalid_game_over: -10 } }).max_invalid_moves).toBe(1);
  });

  it('the system prompt states the invalid-move rule', () => {
    expect(start().messages[0].content).toContain('the 3rd invalid move ends the game');
    expect(start({ max_invalid_moves: 1 }).messages[0].content).toContain('An invalid move (no tag, unreadable, off the board, or on a taken cell) ends the game');
  });
});

describe('timeout', () => {
  it('after max_turns model replies the running game ends with −20', () => {
    const { episode } = start({ max_turns: 3 });
    expect(episode.step(move(0, 0)).done).toBe(false);
    expect(episode.step('bad').done).toBe(false); // invalid replies count as turns
    const r = episode.step(move(8, 8));
    expect(r).toMatchObject({ done: true, reward: -20, observation: '' });
    expect(info(r)).toMatchObject({ result: 'timeout', winner: null, turns: 3, model_moves: 2, move: [8, 8] });
  });

  it('an invalid reply on the last turn times out (timeout reward, not the invalid penalty)', () => {
    const { episode } = start({ max_turns: 1, rewards: { timeout: -7 } });
    const r = episode.step('no move');
    expect(r).toMatchObject({ done: true, reward: -7 });
    expect(info(r)).toMatchObject({ result: 'timeout', invalid_moves: 1, error: 'missing_tag' });
  });

  it('a win on the last turn is a win, not a timeout', () => {
    const r = start({ max_turns: 1 }, X_FOUR).episode.step(move(0, 4));
    expect(info(r).result).toBe('win');
  });

  it('the default max_turns (board_size²) leaves room for a whole game', () => {
    const { episode } = start({ board_size: 5, opponent: 'random' }, DEAD_5X5);
    // Stones the opening put down, and those played since: the model plays the first free cell.
    const taken = new Set(DEAD_5X5.opening!.map(([r, c]) => r * 5 + c));
    let r: StepResult | undefined;
    while (!r?.done) {
      const cell = [...Array(25).keys()].find((i) => !taken.has(i))!;
      r = episode.step(move(Math.floor(cell / 5), cell % 5));
      taken.add(cell);
      const reply = info(r).opponent_move;
      if (reply) taken.add(reply[0] * 5 + reply[1]);
      expect(info(r).error).toBeNull();
    }
    expect(info(r).result).toBe('draw');
    expect(info(r).turns).toBe(7);
  });
});

describe('determinism and lifecycle', () => {
  const play = (seed: number, config: GomokuConfigInput) => {
    const { episode, messages } = start(config, { index: 0 }, seed);
    const out: unknown[] = [messages];
    for (let i = 0; i < 40; i++) {
      const r = episode.step(move(i % 9, (i * 4) % 9));
      out.push(r);
      if (r.done) break;
    }
    return JSON.stringify(out);
  };

  it.each(['random', 'greedy'] as const)('%s opponent: same seed → same game; seeds differ', (opponent) => {
    for (const model_first of [true, false]) {
      expect(play(5, { opponent, model_first })).toBe(play(5, { opponent, model_first }));
    }
    const games = new Set([1, 2, 3, 4, 5, 6].map((s) => play(s, { opponent, model_first: false })));
    expect(games.size).toBeGreaterThan(1);
  });

  it('an episode can be reset again and replays identically; close ends it for good', () => {
    const { episode } = start({}, { index: 0 }, 3);
    const a = episode.step(move(4, 4));
    episode.step(move(0, 0));
    episode.reset({ index: 0 }, 3);
    expect(episode.step(move(4, 4))).toEqual(a);
    episode.close();
    expect(() => episode.step(move(1, 1))).toThrow(expect.objectContaining({ code: 'ENV_EPISODE_CLOSED' }));
    expect(() => episode.reset({ index: 0 }, 3)).toThrow(expect.objectContaining({ code: 'ENV_EPISODE_CLOSED' }));
    expect(() => new GomokuEpisode(parseConfig(gomoku, {})).step('x')).toThrow(expect.objectContaining({ code: 'ENV_NOT_RESET' }));
  });

  it('refuses bad tasks with ENV_INVALID_TASK and stays unreset', () => {
    const episode = new GomokuEpisode(parseConfig(gomoku, { opponent: 'greedy', model_first: false }));
    const bad: unknown[] = [
      42,
      'task',
      [1, 2],
      { index: -1 },
      { index: 1.5 },
      { opening: 'e5' },
      { opening: [[9, 0]] },
      { opening: [[1]] },
      { initial_moves: [[9, 0]] },
      { initial_moves: [[4, 4, 1]] },
      { initial_moves: 'e5' },
      { opening: [[0, 0]], initial_moves: [[1, 1]] },
      {
        initial_moves: [
          [2, 2],
          [2, 2],
        ],
      },
      {
        opening: [
          [1, 1],
          [1, 1],
        ],
      },
      // O (first mover) completes a line inside the opening.
      {
        opening: [
          [0, 0],
          [8, 8],
          [0, 1],
          [8, 7],
          [0, 2],
          [8, 6],
          [0, 3],
          [7, 0],
          [0, 4],
        ],
      },
      // O gets four and then would win with its first move.
      {
        opening: [
          [0, 0],
          [8, 8],
          [0, 1],
          [8, 6],
          [0, 2],
          [8, 4],
          [0, 3],
          [8, 2],
        ],
      },
    ];
    for (const task of bad) {
      expect(() => episode.reset(task as GomokuTask, 1)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
      expect(() => episode.step(move(0, 0))).toThrow(expect.objectContaining({ code: 'ENV_NOT_RESET' }));
    }
    expect(episode.reset(null as unknown as GomokuTask, 1)).toHaveLength(2);
  });
});

describe("prompt_style: 'compact'", () => {
  const compact: GomokuConfigInput = { prompt_style: 'compact', board_size: 5, win_length: 4 };

  it('opens with one user message: the bare board and the short request, no system message', () => {
    const { messages } = start(compact, {
      index: 0,
      opening: [
        [2, 2],
        [0, 4],
      ],
    });
    expect(messages).toEqual([{ role: 'user', content: '....O\n.....\n..X..\n.....\n.....\nX:' }]);
  });

  it('answers a valid move with the board after both moves, and keeps the reply format', async () => {
    const { episode } = start(compact, { index: 0 }, 7);
    const r = await episode.step(move(2, 2));
    expect(r.done).toBe(false);
    const [o] = info(r).opponent_move!;
    const rows = r.observation.split('\n');
    expect(rows).toHaveLength(6);
    expect(rows[2][2]).toBe('X');
    expect(rows[o][info(r).opponent_move![1]]).toBe('O');
    expect(rows[5]).toBe('X:');
    expect(r.observation.replace(/[^XO]/g, '').length).toBe(3); // X, O and the request's X
  });

  it('an invalid move says why in a word, and the board and request stay last', async () => {
    const { episode } = start(
      { ...compact, max_invalid_moves: 2 },
      {
        index: 0,
        opening: [
          [2, 2],
          [0, 4],
        ],
      },
    );
    const occupied = await episode.step(move(2, 2));
    expect(occupied.observation).toBe('invalid (occupied)\n....O\n.....\n..X..\n.....\n.....\nX:');
    expect(occupied.reward).toBe(-1);
    const last = await episode.step('no tag');
    expect(last.done).toBe(true);
    expect(info(last)).toMatchObject({ result: 'invalid', error: 'missing_tag' });
  });

  it('model_first false: the opponent has played before the board is shown', () => {
    const { messages } = start({ ...compact, model_first: false });
    expect(messages).toHaveLength(1);
    expect(messages[0].content.replace(/[^O]/g, '')).toBe('O');
    expect(messages[0].content.endsWith('\nX:')).toBe(true);
  });

  it('the default stays the full prompt', () => {
    expect(start({ board_size: 5, win_length: 4 }).messages.map((m) => m.role)).toEqual(['system', 'user']);
  });
});

describe("task_hints: each step's info.hint", () => {
  const hinted: GomokuConfigInput = { board_size: 5, win_length: 4, move_format: 'bare', task_hints: true };

  it('while the game runs, hint is an empty cell; following the hints plays a whole game with no invalid move, and the last step has none', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const { episode } = start(hinted, { index: 0 }, seed);
      let action = '2,2';
      let r: StepResult;
      do {
        r = await episode.step(action);
        expect(info(r).error).toBeNull();
        if (!r.done) {
          // An occupied or off-board hint would fail the next step with an error.
          expect(info(r).hint).toMatch(/^[0-4],[0-4]$/);
          action = info(r).hint!;
        }
      } while (!r.done);
      expect(info(r).hint).toBeUndefined();
      expect(info(r).result).not.toBe('invalid');
    }
  });

  it('the hint takes a win when there is one', async () => {
    // X (2,1),(2,2); X plays (2,3): three with both ends open; the greedy opponent blocks one end.
    const { episode } = start(
      { ...hinted, opponent: 'greedy' },
      {
        index: 0,
        opening: [
          [2, 1],
          [4, 4],
          [2, 2],
          [4, 0],
        ],
      },
    );
    const r = await episode.step('2,3');
    expect(r.done).toBe(false);
    expect(['2,0', '2,4']).toContain(info(r).hint);
    expect(info(r).hint).not.toBe(info(r).opponent_move!.join(','));
    expect(info(await episode.step(info(r).hint!))).toMatchObject({ result: 'win' });
  });

  it('an invalid move that does not end the game gets a hint too; without task_hints there is none, and the opponent plays the same either way', async () => {
    const { episode } = start(
      { ...hinted, max_invalid_moves: 2 },
      {
        index: 0,
        opening: [
          [2, 2],
          [0, 4],
        ],
      },
    );
    const r = await episode.step('2,2');
    expect(info(r)).toMatchObject({ error: 'occupied' });
    expect(info(r).hint).toMatch(/^[0-4],[0-4]$/);
    expect(info(r).hint).not.toBe('2,2');

    const replies = async (task_hints: boolean) => {
      const { episode } = start({ ...hinted, task_hints }, { index: 0 }, 3);
      const out: unknown[] = [];
      for (const a of ['0,0', '4,4', '0,4']) {
        const s = await episode.step(a);
        if (!task_hints) expect(info(s)).not.toHaveProperty('hint');
        out.push(info(s).opponent_move);
        if (s.done) break;
      }
      return out;
    };
    expect(await replies(true)).toEqual(await replies(false));
  });
});
