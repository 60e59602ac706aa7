import { validateMathRow } from '@opentinker/env-math';
import mathTool from './index';

describe('math-tool dataset row check', () => {
  it('is the math environment’s check, since math-tool serves math’s rows', () => {
    expect(mathTool.validateRow).toBe(validateMathRow);
    expect(mathTool.validateRow?.({ prompt: 'What is 6*7?', reward_model: { ground_truth: '42' } })).toBeNull();
    expect(mathTool.validateRow?.({ prompt: 'What is 6*7?' })).toMatch(/^no ground truth/);
  });
});
