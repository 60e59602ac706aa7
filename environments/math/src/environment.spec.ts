import { describeConformance } from '@opentinker/env-sdk/testing';
import { parseConfig } from '@opentinker/env-sdk';
import math from './index';

// A policy that answers the first problem correctly half the time (by turn) and with garbage otherwise.
describeConformance(math, {
  config: { difficulty: 3 },
  policy: (messages, turn) => (turn % 2 === 0 ? `The answer is \\boxed{${messages.length}}.` : 'no idea'),
});

describe('math environment', () => {
  it('rewards a correct boxed answer with 1 and reports what it graded', async () => {
    const inst = await math.create(parseConfig(math, { difficulty: 1 }), { workDir: '/tmp', log: () => undefined });
    const task = await inst.tasks.get('test', 0);
    const episode = inst.newEpisode();
    const messages = await episode.reset(task, 0);
    expect(messages).toEqual([{ role: 'user', content: expect.stringContaining("Let's think step by step and output the final answer within \\boxed{}.") }]);
    const result = await episode.step(`Counting carefully, the total is $\\boxed{${task.ground_truth}}$.`);
    expect(result).toEqual({
      observation: '',
      reward: 1,
      done: true,
      info: { correct: true, extracted: task.ground_truth, ground_truth: task.ground_truth, data_source: 'opentinker/synthetic-arithmetic' },
    });
  });
});
