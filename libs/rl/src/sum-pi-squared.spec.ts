import { expectClose, F64 } from './testing/golden';
import { sumPiSquaredFromLogits } from './sum-pi-squared';

describe('sumPiSquaredFromLogits (verl calculate_sum_pi_squared_from_logits)', () => {
  test('equals Σ softmax² computed directly, and stays finite for large logits', () => {
    const z = [0.3, -1.2, 2.0, 0.0, 0.7];
    const e = z.map(Math.exp);
    const s = e.reduce((a, b) => a + b, 0);
    expectClose(sumPiSquaredFromLogits(z, 1, 5), [e.reduce((a, x) => a + (x / s) ** 2, 0)], F64, 'direct');
    expectClose(sumPiSquaredFromLogits([7, 7, 7, 7, 1e4, 0, 0, -1e4], 2, 4), [0.25, 1], F64, 'uniform and one-hot');
  });
});
