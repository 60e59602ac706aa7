import { parseResults, summarise } from './public/episodes.mjs';

describe('dashboard inference results', () => {
  it('reads JSONL, counting lines that are not JSON objects', () => {
    const { episodes, bad } = parseResults('{"reward":1}\n\n{"reward":0}\n{"trunc\n42\n');
    expect(episodes).toEqual([{ reward: 1 }, { reward: 0 }]);
    expect(bad).toBe(2);
  });

  it('summarises rewards, math accuracy and game results', () => {
    expect(summarise([{ reward: 1, info: { correct: true } }, { reward: 0, info: { correct: false } }, { reward: 0.5 }])).toEqual({
      episodes: 3,
      rewardMean: 0.5,
      accuracy: 0.5,
      winRate: null,
      lossRate: null,
      drawRate: null,
    });
    const games = summarise([
      { reward: 1, result: 'win' },
      { reward: -1, info: { result: 'loss' } },
      { reward: 0, result: 'draw' },
      { reward: 1, result: 'win' },
    ]);
    expect(games).toMatchObject({ winRate: 0.5, lossRate: 0.25, drawRate: 0.25 });
    expect(summarise([])).toEqual({ episodes: 0, rewardMean: null, accuracy: null, winRate: null, lossRate: null, drawRate: null });
  });
});
