import { resultRates, rolloutMetrics, summarizeEpisodes, validationMetrics } from './episode-metrics';
import type { Trajectory } from './trajectory';

const episode = (reward: number, info: Record<string, unknown>, o: Partial<Trajectory> = {}): Trajectory =>
  ({ reward, info, promptIds: [1, 2, 3], generatedTokens: 4, turnEnds: [3], finish: 'done', ...o }) as Trajectory;

describe('episode metrics', () => {
  it('summarises rewards, accuracy, game results and numeric info under the contract names', () => {
    const s = summarizeEpisodes([
      episode(1, { correct: true, result: 'win', moves: 7, note: 'x' }),
      episode(0, { correct: false, result: 'loss', moves: 9, legal: true }),
      episode(0, { result: 'draw', moves: 11 }, { finish: 'env_error', promptIds: [1, 2, 3, 4, 5, 6], generatedTokens: 2, turnEnds: [1, 3] }),
    ]);
    expect(rolloutMetrics(s)).toMatchObject({
      'reward/mean': 1 / 3,
      'reward/min': 0,
      'reward/max': 1,
      'critic/score/mean': 1 / 3,
      'critic/score/min': 0,
      'critic/score/max': 1,
      'response_length/mean': 10 / 3,
      'prompt_length/mean': 4,
      'turns/mean': 4 / 3,
      'episodes/env_errors': 1,
      'train/accuracy': 0.5,
    });
    expect(rolloutMetrics(s)['reward/std']).toBeCloseTo(Math.sqrt(2 / 9), 12);
    expect(validationMetrics(s)).toEqual({
      'val/reward_mean': 1 / 3,
      'val/response_length': 10 / 3,
      'val/accuracy': 0.5,
      'val/win_rate': 1 / 3,
      'val/loss_rate': 1 / 3,
      'val/draw_rate': 1 / 3,
      'val/moves': 9,
      'val/legal': 1,
    });
  });

  it('leaves out what the environment does not report and bounds what a hostile one does', () => {
    const bare = validationMetrics(summarizeEpisodes([episode(0.5, {})]));
    expect(bare).toEqual({ 'val/reward_mean': 0.5, 'val/response_length': 4 });
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
    const noisy = validationMetrics(summarizeEpisodes([episode(0, { ...many, ['bad key!']: 1, inf: Infinity })]));
    expect(Object.keys(noisy).filter((k) => /^val\/k\d+$/.test(k))).toHaveLength(32);
    expect(noisy['val/bad key!']).toBeUndefined();
    expect(noisy['val/inf']).toBeUndefined();
  });

  it('counts only standard fields of the documented types, and other results in the denominator only', () => {
    const s = summarizeEpisodes([
      episode(1, { correct: 'yes', result: 'win' }),
      episode(0, { correct: true, result: 'timeout' }),
      episode(0, { result: 'not a name!' }),
      episode(0, { result: 7, correct: 0.5 }),
    ]);
    expect(s.accuracy).toBe(0.75);
    expect(s.results).toEqual({ win: 0.5, timeout: 0.5 });
    expect(validationMetrics(s)).toMatchObject({ 'val/win_rate': 0.5, 'val/loss_rate': 0, 'val/draw_rate': 0 });
    expect(validationMetrics(s)['val/correct']).toBeUndefined();
    expect(resultRates(summarizeEpisodes([episode(0, { moves: 3 })]))).toEqual({});
  });
});
