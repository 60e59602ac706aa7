import { EMPTY, Board, O, X } from './board';
import { gomokuConfigSchema, type GomokuConfigInput } from './config';
import { gomokuTasks, makeTask, readTask } from './tasks';

const cfg = (input: GomokuConfigInput = {}) => gomokuConfigSchema.parse(input);

describe('tasks', () => {
  it('train is endless, test has test_size tasks (default 64)', () => {
    expect(gomokuTasks(cfg()).size('train')).toBeNull();
    expect(gomokuTasks(cfg()).size('test')).toBe(64);
    expect(gomokuTasks(cfg({ test_size: 5 })).size('test')).toBe(5);
  });

  it('without random openings a task is just its index', () => {
    const tasks = gomokuTasks(cfg());
    expect(tasks.get('test', 7)).toEqual({ index: 7 });
    expect(tasks.get('train', 123456)).toEqual({ index: 123456 });
  });

  it('refuses indices outside the split', () => {
    const tasks = gomokuTasks(cfg({ test_size: 5 }));
    expect(() => tasks.get('test', 5)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => tasks.get('train', -1)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
    expect(() => tasks.get('train', 0.5)).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK' }));
  });

  it('random openings: deterministic by index, distinct between splits and indices, never decided', () => {
    const configs = [
      cfg({ random_opening_moves: 4 }),
      cfg({ random_opening_moves: 6, board_size: 5, win_length: 3, model_first: false }),
      cfg({ random_opening_moves: 12, board_size: 7, win_length: 3, allow_overline: false }),
    ];
    for (const config of configs) {
      const seen = new Set<string>();
      for (let i = 0; i < 40; i++) {
        const a = makeTask(config, 'train', i);
        expect(makeTask(config, 'train', i)).toEqual(a);
        expect(JSON.parse(JSON.stringify(a))).toEqual(a);
        expect(a.opening).toHaveLength(config.random_opening_moves);
        seen.add(JSON.stringify(a.opening));
        seen.add(JSON.stringify(makeTask(config, 'test', i).opening));
        // Replay: no stone completes a line, and nobody can win on the next move.
        const board = new Board({ size: config.board_size, winLength: config.win_length, allowOverline: config.allow_overline });
        let player: 1 | 2 = config.model_first ? X : O;
        for (const [r, c] of a.opening!) {
          const cell = board.index(r, c);
          board.place(cell, player);
          expect(board.wins(cell, player)).toBe(false);
          player = player === X ? O : X;
        }
        for (let cell = 0; cell < board.cells.length; cell++) {
          if (board.cells[cell] === EMPTY) expect(board.wins(cell, X) || board.wins(cell, O)).toBe(false);
        }
      }
      expect(seen.size).toBe(80);
    }
  });

  it('readTask accepts null, {} and generated tasks; converts the opening to cells', () => {
    const config = cfg();
    expect(readTask(null, config)).toEqual({ index: 0, opening: [], form: 'opening' });
    expect(readTask({}, config)).toEqual({ index: 0, opening: [], form: 'opening' });
    // OpenTinker's key, as its clients send it to /reset.
    expect(readTask({ initial_moves: [[1, 2]] }, config)).toEqual({ index: 0, opening: [11], form: 'initial_moves' });
    expect(readTask({ initial_moves: [] }, config)).toEqual({ index: 0, opening: [], form: 'initial_moves' });
    expect(
      readTask(
        {
          index: 3,
          opening: [
            [1, 2],
            [8, 8],
          ],
          note: 'extra keys are ignored',
        },
        config,
      ),
    ).toEqual({ index: 3, opening: [11, 80], form: 'opening' });
  });

  it('readTask names what is wrong', () => {
    const config = cfg();
    expect(() =>
      readTask(
        {
          opening: [
            [0, 0],
            [9, 9],
          ],
        },
        config,
      ),
    ).toThrow(expect.objectContaining({ code: 'ENV_INVALID_TASK', field: 'task.opening.1' }));
    expect(() => readTask({ index: 'a' }, config)).toThrow(expect.objectContaining({ field: 'task.index' }));
    const half = Array.from({ length: 41 }, (_, k) => [Math.floor(k / 9), k % 9]);
    expect(() => readTask({ opening: half }, config)).toThrow(expect.objectContaining({ field: 'task.opening' }));
  });
});

describe('config', () => {
  it('defaults', () => {
    expect(cfg()).toEqual({
      board_size: 9,
      win_length: 5,
      allow_overline: true,
      opponent: 'random',
      model_first: true,
      max_invalid_moves: 3,
      max_turns: null,
      test_size: 64,
      random_opening_moves: 0,
      random_opening_moves_min: null,
      move_format: 'tag',
      prompt_style: 'full',
      task_hints: false,
      rewards: { win: 10, loss: -10, draw: 0, invalid_move: -1, invalid_game_over: -20, timeout: -20, move: 0 },
    });
  });

  it.each([
    [{ board_size: 4 }, 'board_size'],
    [{ board_size: 20 }, 'board_size'],
    [{ board_size: 9.5 }, 'board_size'],
    [{ board_size: 6, win_length: 7 }, 'win_length'],
    [{ win_length: 2 }, 'win_length'],
    [{ opponent: 'minimax' }, 'opponent'],
    [{ max_invalid_moves: 0 }, 'max_invalid_moves'],
    [{ max_turns: 0 }, 'max_turns'],
    [{ random_opening_moves: 7, board_size: 5 }, 'random_opening_moves'],
    [{ rewards: { win: Infinity } }, 'rewards'],
    [{ rewards: { bonus: 1 } }, 'rewards'],
    [{ size: 9 }, ''],
  ])('refuses %j', (input, key) => {
    const result = gomokuConfigSchema.safeParse(input);
    expect(result.success).toBe(false);
    if (key) expect(result.error!.issues[0].path[0]).toBe(key);
  });
});

describe('task_hints', () => {
  it("gives each task the greedy heuristic's move for X in its opening position, on an empty cell", () => {
    const config = cfg({ board_size: 5, win_length: 4, random_opening_moves: 2, task_hints: true });
    const seen = new Set<string>();
    for (let index = 0; index < 50; index++) {
      const task = makeTask(config, 'train', index);
      expect(task.opening).toHaveLength(2);
      expect(task.hint).toMatch(/^[0-4],[0-4]$/);
      const [r, c] = task.hint!.split(',').map(Number);
      expect(task.opening!.some(([or, oc]) => or === r && oc === c)).toBe(false);
      expect(makeTask(config, 'train', index)).toEqual(task);
      seen.add(task.hint!);
    }
    // The opening varies, so does the demonstrated move.
    expect(seen.size).toBeGreaterThan(3);
  });

  it('without an opening the hint is the centre, the cell in the most windows', () => {
    const config = cfg({ board_size: 5, win_length: 4, task_hints: true });
    // No opening: the centre scores highest on an empty board.
    expect(makeTask(config, 'test', 0)).toEqual({ index: 0, hint: '2,2' });
  });

  it('keeps tasks unchanged when off, and refuses a config where O would be to move', () => {
    expect(makeTask(cfg({ random_opening_moves: 2 }), 'train', 3)).not.toHaveProperty('hint');
    const refused = gomokuConfigSchema.safeParse({ random_opening_moves: 1, task_hints: true });
    expect(refused.success).toBe(false);
    expect(refused.error!.issues[0].path).toEqual(['task_hints']);
    expect(gomokuConfigSchema.safeParse({ random_opening_moves: 1, task_hints: true, model_first: false }).success).toBe(true);
  });

  it('random_opening_moves_min: openings of every count in the range with the parity of the maximum, hints on each', () => {
    const config = cfg({ board_size: 5, win_length: 4, random_opening_moves: 6, random_opening_moves_min: 1, task_hints: true });
    const counts = new Set<number>();
    for (let index = 0; index < 60; index++) {
      const task = makeTask(config, 'train', index);
      counts.add(task.opening?.length ?? 0);
      expect(task.hint).toMatch(/^[0-4],[0-4]$/);
    }
    expect([...counts].sort()).toEqual([2, 4, 6]);
    expect(gomokuConfigSchema.safeParse({ random_opening_moves: 2, random_opening_moves_min: 4 }).error!.issues[0].path).toEqual(['random_opening_moves_min']);
  });
});
