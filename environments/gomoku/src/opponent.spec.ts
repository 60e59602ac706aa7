import { createRng } from '@opentinker/env-sdk';
import { Board, EMPTY, O, X, type Player } from './board';
import { greedyMove, heuristicScores, opponentMove, randomMove, windowsOf } from './opponent';

function board(stones: { x?: Array<[number, number]>; o?: Array<[number, number]> }, size = 9, allowOverline = true): Board {
  const b = new Board({ size, winLength: 5, allowOverline });
  for (const [r, c] of stones.x ?? []) b.place(b.index(r, c), X);
  for (const [r, c] of stones.o ?? []) b.place(b.index(r, c), O);
  return b;
}
const rc = (b: Board, cell: number): [number, number] => [Math.floor(cell / b.size), cell % b.size];
/** The move for every seed in 1..20 (checks it is the same, or one of `allowed`). */
function movesOverSeeds(b: Board, player: Player): Set<string> {
  const seen = new Set<string>();
  for (let seed = 1; seed <= 20; seed++) seen.add(rc(b, greedyMove(b, player, createRng(seed))).join(','));
  return seen;
}

describe('greedy opponent', () => {
  it('takes a win in one (horizontal, and the gap of O O _ O O)', () => {
    const a = board({
      o: [
        [2, 1],
        [2, 2],
        [2, 3],
        [2, 4],
      ],
      x: [
        [2, 0],
        [5, 5],
        [6, 6],
        [7, 7],
      ],
    });
    expect(movesOverSeeds(a, O)).toEqual(new Set(['2,5']));
    const b = board({
      o: [
        [0, 0],
        [1, 1],
        [3, 3],
        [4, 4],
      ],
      x: [
        [8, 0],
        [8, 1],
        [8, 2],
      ],
    });
    expect(movesOverSeeds(b, O)).toEqual(new Set(['2,2']));
  });

  it('prefers its own win over blocking the other side', () => {
    const b = board({
      o: [
        [0, 0],
        [0, 1],
        [0, 2],
        [0, 3],
      ],
      x: [
        [5, 1],
        [5, 2],
        [5, 3],
        [5, 4],
      ],
    });
    expect(movesOverSeeds(b, O)).toEqual(new Set(['0,4']));
  });

  it('blocks a closed four at its only open end', () => {
    // O X X X X _ on row 4: X wins at (4,5) unless blocked.
    const b = board({
      x: [
        [4, 1],
        [4, 2],
        [4, 3],
        [4, 4],
      ],
      o: [
        [4, 0],
        [0, 8],
      ],
    });
    expect(movesOverSeeds(b, O)).toEqual(new Set(['4,5']));
  });

  it('blocks a split four (X X _ X X) in its gap, on a diagonal', () => {
    const b = board({
      x: [
        [1, 7],
        [2, 6],
        [4, 4],
        [5, 3],
      ],
      o: [[8, 8]],
    });
    expect(movesOverSeeds(b, O)).toEqual(new Set(['3,5']));
  });

  it('blocks an open four at one of its two ends (whichever, from the seed)', () => {
    // _ X X X X _ vertically in column 4, rows 2..5: ends (1,4) and (6,4).
    const b = board({
      x: [
        [2, 4],
        [3, 4],
        [4, 4],
        [5, 4],
      ],
      o: [
        [0, 0],
        [8, 8],
        [0, 8],
      ],
    });
    const seen = movesOverSeeds(b, O);
    for (const move of seen) expect(['1,4', '6,4']).toContain(move);
  });

  it('blocks an open three before it becomes an open four', () => {
    // _ _ X X X _ _ on row 4: the heuristic puts O next to the three.
    const b = board({
      x: [
        [4, 3],
        [4, 4],
        [4, 5],
      ],
      o: [
        [0, 0],
        [0, 8],
      ],
    });
    for (const move of movesOverSeeds(b, O)) expect(['4,2', '4,6']).toContain(move);
  });

  it('with overlines disallowed, does not "block" a gap that would only make six', () => {
    // X X X X _ X: filling the gap makes six, which does not win; nothing to block, so it plays on
    // heuristics, and must still block the real threat elsewhere if there is one.
    const quiet = board(
      {
        x: [
          [7, 0],
          [7, 1],
          [7, 2],
          [7, 3],
          [7, 5],
        ],
        o: [
          [0, 0],
          [1, 1],
          [6, 4],
        ],
      },
      9,
      false,
    );
    expect(quiet.wins(quiet.index(7, 4), X)).toBe(false);
    const threat = board(
      {
        x: [
          [7, 0],
          [7, 1],
          [7, 2],
          [7, 3],
          [7, 5],
          [2, 8],
          [3, 8],
          [4, 8],
          [5, 8],
        ],
        o: [
          [0, 0],
          [1, 1],
          [6, 4],
          [1, 8],
        ],
      },
      9,
      false,
    );
    expect(movesOverSeeds(threat, O)).toEqual(new Set(['6,8']));
  });

  it('opens in the centre of an empty board', () => {
    const b = board({});
    expect(movesOverSeeds(b, O)).toEqual(new Set(['4,4']));
  });

  it('breaks ties with the seeded RNG: reproducible per seed, varied across seeds', () => {
    const b = board({ x: [[4, 4]] });
    const first = [1, 2, 3, 4, 5, 6, 7, 8].map((s) => greedyMove(b, O, createRng(s)));
    const again = [1, 2, 3, 4, 5, 6, 7, 8].map((s) => greedyMove(b, O, createRng(s)));
    expect(again).toEqual(first);
    expect(new Set(first).size).toBeGreaterThan(1); // the 8 neighbours of (4,4) tie
    for (const cell of first) expect(Math.max(Math.abs(rc(b, cell)[0] - 4), Math.abs(rc(b, cell)[1] - 4))).toBe(1);
  });

  it('beats the random opponent almost always', () => {
    let greedyWins = 0;
    for (let seed = 0; seed < 50; seed++) {
      const rng = createRng(seed);
      const b = new Board({ size: 9, winLength: 5, allowOverline: true });
      let player: Player = seed % 2 ? X : O;
      while (!b.isFull()) {
        const cell = player === O ? greedyMove(b, O, rng) : randomMove(b, rng);
        b.place(cell, player);
        if (b.wins(cell, player)) {
          if (player === O) greedyWins++;
          break;
        }
        player = player === X ? O : X;
      }
    }
    expect(greedyWins).toBeGreaterThanOrEqual(48);
  });
});

describe('random opponent', () => {
  it('plays only empty cells, deterministically per seed, and fills a board', () => {
    const b = new Board({ size: 5, winLength: 5, allowOverline: true });
    const rng = createRng(9);
    const order: number[] = [];
    while (!b.isFull()) {
      const cell = opponentMove('random', b, O, rng);
      expect(b.cells[cell]).toBe(EMPTY);
      b.place(cell, O);
      order.push(cell);
    }
    expect(new Set(order).size).toBe(25);
    const again = new Board({ size: 5, winLength: 5, allowOverline: true });
    const rng2 = createRng(9);
    expect(
      order.map(() => {
        const c = randomMove(again, rng2);
        again.place(c, O);
        return c;
      }),
    ).toEqual(order);
    expect(() => opponentMove('random', b, O, rng)).toThrow(RangeError);
    expect(() => opponentMove('greedy', b, O, rng)).toThrow(RangeError);
  });
});

describe('heuristic helpers', () => {
  it('enumerates every window once', () => {
    // 9×9, length 5: 9·5 horizontal + 9·5 vertical + 5·5 per diagonal direction.
    expect(windowsOf(9, 5).length / 5).toBe(45 + 45 + 25 + 25);
    expect(windowsOf(5, 5).length / 5).toBe(12);
    expect(windowsOf(9, 5)).toBe(windowsOf(9, 5));
  });

  it('scores taken cells 0 and prefers the centre', () => {
    const b = board({ x: [[0, 0]] });
    const s = heuristicScores(b, O);
    expect(s[0]).toBe(0);
    expect(s[b.index(4, 4)]).toBeGreaterThan(s[b.index(0, 8)]);
  });
});
