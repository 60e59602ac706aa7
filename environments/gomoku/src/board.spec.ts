import { Board, O, X, type Player } from './board';

const rules = (size = 9, winLength = 5, allowOverline = true) => ({ size, winLength, allowOverline });

/** Places stones given as [row, col] pairs; returns the board. */
function setUp(board: Board, player: Player, stones: Array<[number, number]>): Board {
  for (const [r, c] of stones) board.place(board.index(r, c), player);
  return board;
}

describe('Board: lines of five at the edges and corners (9×9)', () => {
  const cases: Array<[string, Array<[number, number]>]> = [
    [
      'horizontal along the top edge from the top-left corner',
      [
        [0, 0],
        [0, 1],
        [0, 2],
        [0, 3],
        [0, 4],
      ],
    ],
    [
      'horizontal along the bottom edge into the bottom-right corner',
      [
        [8, 4],
        [8, 5],
        [8, 6],
        [8, 7],
        [8, 8],
      ],
    ],
    [
      'vertical along the left edge into the bottom-left corner',
      [
        [4, 0],
        [5, 0],
        [6, 0],
        [7, 0],
        [8, 0],
      ],
    ],
    [
      'vertical along the right edge from the top-right corner',
      [
        [0, 8],
        [1, 8],
        [2, 8],
        [3, 8],
        [4, 8],
      ],
    ],
    [
      'diagonal ↘ from the top-left corner',
      [
        [0, 0],
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 4],
      ],
    ],
    [
      'diagonal ↘ into the bottom-right corner',
      [
        [4, 4],
        [5, 5],
        [6, 6],
        [7, 7],
        [8, 8],
      ],
    ],
    [
      'anti-diagonal ↙ from the top-right corner',
      [
        [0, 8],
        [1, 7],
        [2, 6],
        [3, 5],
        [4, 4],
      ],
    ],
    [
      'anti-diagonal ↙ into the bottom-left corner',
      [
        [4, 4],
        [5, 3],
        [6, 2],
        [7, 1],
        [8, 0],
      ],
    ],
    [
      'diagonal ↘ along an edge-touching short diagonal',
      [
        [4, 0],
        [5, 1],
        [6, 2],
        [7, 3],
        [8, 4],
      ],
    ],
  ];

  it.each(cases)('%s wins, whichever stone of the line was played last', (_name, line) => {
    for (let last = 0; last < line.length; last++) {
      const board = new Board(rules());
      setUp(
        board,
        X,
        line.filter((_, k) => k !== last),
      );
      const cell = board.index(...line[last]);
      expect(board.wins(cell, X)).toBe(true); // look-ahead on the empty cell
      board.place(cell, X);
      expect(board.wins(cell, X)).toBe(true);
      expect(board.wins(cell, O)).toBe(false);
      expect(board.findWinner()).toBe(X);
    }
  });

  it.each(cases)('%s: four stones do not win, and a gap breaks the line', (_name, line) => {
    const board = setUp(new Board(rules()), O, line.slice(0, 4));
    expect(board.findWinner()).toBeNull();
    for (const [r, c] of line.slice(0, 4)) expect(board.wins(board.index(r, c), O)).toBe(false);
    const gapped = setUp(new Board(rules()), O, [...line.slice(0, 2), ...line.slice(3)]);
    expect(gapped.findWinner()).toBeNull();
  });

  it('does not wrap lines around the board edge', () => {
    // (0,6),(0,7),(0,8) then (1,0),(1,1): consecutive flat indices, not a line.
    const board = setUp(new Board(rules()), X, [
      [0, 6],
      [0, 7],
      [0, 8],
      [1, 0],
      [1, 1],
    ]);
    expect(board.findWinner()).toBeNull();
    // Anti-diagonal that would wrap: (0,1),(1,0),(2,8)...
    const wrap = setUp(new Board(rules()), X, [
      [0, 1],
      [1, 0],
      [1, 8],
      [2, 7],
      [3, 6],
    ]);
    expect(wrap.findWinner()).toBeNull();
  });

  it('mixed colours break a line', () => {
    const board = setUp(new Board(rules()), X, [
      [2, 0],
      [2, 1],
      [2, 3],
      [2, 4],
      [2, 5],
    ]);
    board.place(board.index(2, 2), O);
    expect(board.findWinner()).toBeNull();
  });
});

describe('Board: overlines', () => {
  const six: Array<[number, number]> = [
    [3, 0],
    [3, 1],
    [3, 2],
    [3, 3],
    [3, 4],
    [3, 5],
  ];

  it('allow_overline true (freestyle): six in a row wins, in every direction', () => {
    const board = setUp(new Board(rules(9, 5, true)), X, six);
    expect(board.wins(board.index(3, 5), X)).toBe(true);
    expect(board.wins(board.index(3, 2), X)).toBe(true);
    const diag = setUp(new Board(rules(9, 5, true)), O, [
      [0, 0],
      [1, 1],
      [2, 2],
      [4, 4],
      [5, 5],
      [6, 6],
    ]);
    expect(diag.wins(diag.index(3, 3), O)).toBe(true); // filling the gap makes seven
  });

  it('allow_overline false (exactly five): six in a row does not win, but exactly five does', () => {
    const board = setUp(new Board(rules(9, 5, false)), X, six);
    expect(board.wins(board.index(3, 5), X)).toBe(false);
    expect(board.wins(board.index(3, 0), X)).toBe(false);
    expect(board.findWinner()).toBeNull();
    // XXXX_X: filling the gap makes six → no win; XXXX_ . : the end makes exactly five → win.
    const gap = setUp(new Board(rules(9, 5, false)), X, [
      [5, 0],
      [5, 1],
      [5, 2],
      [5, 3],
      [5, 5],
    ]);
    expect(gap.wins(gap.index(5, 4), X)).toBe(false);
    const open = setUp(new Board(rules(9, 5, false)), X, [
      [6, 1],
      [6, 2],
      [6, 3],
      [6, 4],
    ]);
    expect(open.wins(open.index(6, 0), X)).toBe(true);
    expect(open.wins(open.index(6, 5), X)).toBe(true);
  });

  it('allow_overline false: a stone making six one way and exactly five another way still wins', () => {
    const board = setUp(new Board(rules(9, 5, false)), X, [
      [4, 0],
      [4, 1],
      [4, 2],
      [4, 4],
      [4, 5], // row 4 with a gap at (4,3): six when filled
      [0, 3],
      [1, 3],
      [2, 3],
      [3, 3], // column 3 above the gap: five when filled
    ]);
    expect(board.lineThrough(board.index(4, 3), X, 0, 1)).toBe(6);
    expect(board.lineThrough(board.index(4, 3), X, 1, 0)).toBe(5);
    expect(board.wins(board.index(4, 3), X)).toBe(true);
  });

  it('a win length equal to the board size needs the whole row (5×5)', () => {
    const board = setUp(new Board(rules(5, 5, false)), O, [
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(board.wins(board.index(4, 4), O)).toBe(true);
  });
});

describe('Board: draws and bookkeeping', () => {
  it('a scripted 3×3 game (win length 3) fills the board with no winner', () => {
    const board = new Board(rules(3, 3, true));
    const script: Array<[number, number]> = [
      [0, 0],
      [1, 1],
      [0, 2],
      [0, 1],
      [2, 1],
      [1, 2],
      [1, 0],
      [2, 0],
      [2, 2],
    ];
    let player: Player = X;
    for (const [r, c] of script) {
      const cell = board.index(r, c);
      board.place(cell, player);
      expect(board.wins(cell, player)).toBe(false);
      player = player === X ? O : X;
    }
    // X O X / X O O / O X X
    expect(board.isFull()).toBe(true);
    expect(board.findWinner()).toBeNull();
    expect(Array.from(board.cells)).toEqual([X, O, X, X, O, O, O, X, X]);
  });

  it('refuses occupied and missing cells; counts stones; clones independently', () => {
    const board = new Board(rules(5, 3));
    board.place(7, X);
    expect(() => board.place(7, O)).toThrow(RangeError);
    expect(() => board.place(25, O)).toThrow(RangeError);
    expect(() => board.place(-1, O)).toThrow(RangeError);
    expect(board.stones).toBe(1);
    const copy = board.clone();
    copy.place(8, O);
    expect(board.stones).toBe(1);
    expect(board.at(1, 3)).toBe(0);
    expect(copy.at(1, 3)).toBe(O);
    board.remove(7);
    expect(board.stones).toBe(0);
    expect(board.empties()).toHaveLength(25);
  });

  it('rejects impossible rules', () => {
    expect(() => new Board(rules(5, 6))).toThrow(RangeError);
    expect(() => new Board(rules(0, 1))).toThrow(RangeError);
  });
});
