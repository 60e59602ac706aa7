import { groupMetrics, groupOf, metricWords } from './public/metric-groups.mjs';

describe('dashboard metric groups', () => {
  it('splits names into lower-case words', () => {
    expect(metricWords('actor/ppo_kl')).toEqual(['actor', 'ppo', 'kl']);
    expect(metricWords('Val/Win-Rate')).toEqual(['val', 'win', 'rate']);
  });

  it.each([
    ['reward', 'reward'],
    ['critic/score/mean', 'reward'],
    ['val/test_score/openai/gsm8k', 'reward'],
    ['episode_return', 'reward'],
    ['val/accuracy', 'accuracy'],
    ['win_rate', 'accuracy'],
    ['pass@1', 'accuracy'],
    ['actor/ppo_kl', 'kl'],
    ['actor/kl_loss', 'kl'],
    ['kl', 'kl'],
    ['actor/entropy', 'entropy'],
    ['response_length/mean', 'length'],
    ['prompt_len', 'length'],
    ['perf/throughput', 'throughput'],
    ['tokens_per_second', 'throughput'],
    ['samples_per_s', 'throughput'],
  ])('puts %s in the %s chart', (name, group) => {
    expect(groupOf(name)?.id).toBe(group);
  });

  it.each(['step_fraction', 'elapsed_seconds', 'actor/pg_clipfrac', 'window_size', 'klass', 'timing_s/gen', 'per_step'])('gives %s a chart of its own', (name) => {
    expect(groupOf(name)).toBeNull();
  });

  it('orders known groups first, then one chart per other name, and sorts names inside a chart', () => {
    const names = ['step_fraction', 'actor/ppo_kl', 'val/reward', 'critic/score/mean', 'elapsed_seconds', 'actor/entropy', 'val/reward'];
    expect(groupMetrics(names)).toEqual([
      { id: 'reward', title: 'Reward', names: ['critic/score/mean', 'val/reward'] },
      { id: 'kl', title: 'KL divergence', names: ['actor/ppo_kl'] },
      { id: 'entropy', title: 'Entropy', names: ['actor/entropy'] },
      { id: 'metric:elapsed_seconds', title: 'elapsed_seconds', names: ['elapsed_seconds'] },
      { id: 'metric:step_fraction', title: 'step_fraction', names: ['step_fraction'] },
    ]);
    expect(groupMetrics([])).toEqual([]);
  });
});
