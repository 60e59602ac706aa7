import { checkDatasetRow } from '@opentinker/env-sdk';
import math from '../environment';
import { rowToTask, validateMathRow } from './rows';

describe('math dataset row check (validateRow)', () => {
  it('accepts the verl layout: prompt messages and reward_model.ground_truth', () => {
    const row = {
      data_source: 'openai/gsm8k',
      prompt: [{ role: 'user', content: 'What is 2+2?' }],
      reward_model: { style: 'rule', ground_truth: '4' },
    };
    expect(validateMathRow(row)).toBeNull();
    expect(math.validateRow?.(row)).toBeNull();
  });

  it('accepts question/answer columns (GSM8K) and problem/solution columns (MATH)', () => {
    expect(validateMathRow({ question: 'What is 2+2?', answer: 'Two and two.\n#### 4' })).toBeNull();
    expect(validateMathRow({ problem: 'What is 1/2+1/4?', solution: 'So it is $\\boxed{\\frac34}$.' })).toBeNull();
  });

  it('names what a bad row lacks', () => {
    expect(validateMathRow({ prompt: 'What is 2+2?' })).toMatch(/^no ground truth/);
    expect(validateMathRow({ ground_truth: '4' })).toBe('no prompt');
    expect(validateMathRow({ text: 'hello', label: 1 })).toBe('no prompt');
    expect(
      validateMathRow({
        prompt: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: 'a' },
        ],
        ground_truth: '1',
      }),
    ).toMatch(/ending with a user message/);
    expect(checkDatasetRow(math, 'a string row')).toBe('not a JSON object');
  });

  it('agrees with the task loader on every row (same rowToTask)', () => {
    const rows = [
      { prompt: 'q', ground_truth: '' },
      { prompt: '', ground_truth: '1' },
      { question: 'q', answer: 7 },
      { prompt: 'q', answer: 'x' },
    ];
    for (const row of rows) {
      const task = rowToTask(row, 'train', 0);
      expect(validateMathRow(row)).toBe('error' in task ? task.error : null);
    }
    expect(validateMathRow({ question: 'q', answer: 7 })).toBeNull();
    expect(validateMathRow({ prompt: '', ground_truth: '1' })).not.toBeNull();
  });
});
