import { tokenLoss } from './tinker-losses';

/** ∂loss/∂π by central differences, for each token. */
function numeric(f: (pi: Float32Array) => Float32Array, pi: number[]): number[] {
  const h = 1e-3;
  return pi.map((_, i) => {
    const up = Float32Array.from(pi);
    const down = Float32Array.from(pi);
    up[i] += h;
    down[i] -= h;
    return (f(up)[i] - f(down)[i]) / (2 * h);
  });
}

describe('Tinker losses as per-token coefficients', () => {
  const inputs = { target_tokens: [5, 6, 7, 8], logprobs: [-1, -0.5, -2, -1.2], advantages: [0, 1.5, -0.75, 2], weights: [0, 1, 0.5, 1] };
  const pi = [-1.1, -0.4, -2.3, -0.9];

  it('cross_entropy is −w·π per token (summed, not averaged)', () => {
    const { coef, loss } = tokenLoss('cross_entropy', {}, inputs)(Float32Array.from(pi));
    expect(Array.from(loss)).toEqual([0, 0.4, 1.15, 0.9].map((v, i) => Math.fround(v === 0 ? 0 : -inputs.weights[i] * pi[i])));
    expect(Array.from(coef)).toEqual([-0, -1, -0.5, -1]);
  });

  it('importance_sampling is −exp(π − q)·A', () => {
    const { loss } = tokenLoss('importance_sampling', {}, inputs)(Float32Array.from(pi));
    pi.forEach((p, i) => expect(loss[i]).toBeCloseTo(-Math.exp(p - inputs.logprobs[i]) * inputs.advantages[i], 5));
  });

  it.each(['importance_sampling', 'ppo', 'cispo'] as const)('%s: each coefficient is the derivative of its token’s loss', (lossFn) => {
    const f = tokenLoss(lossFn, { clip_low_threshold: 0.8, clip_high_threshold: 1.2 }, inputs);
    const { coef } = f(Float32Array.from(pi));
    // cispo stops the gradient through the clipped ratio: its coefficient is the clipped ratio times −A.
    const expected = lossFn === 'cispo' ? pi.map((p, i) => -Math.min(Math.max(Math.exp(p - inputs.logprobs[i]), 0.8), 1.2) * inputs.advantages[i]) : numeric((x) => f(x).loss, pi);
    expected.forEach((e, i) => expect(coef[i]).toBeCloseTo(e, 3));
  });

  it('ppo clips the ratio: no gradient where the clipped term is the smaller', () => {
    // r = e^1 ≈ 2.72 > 1.2 with A > 0: clipped.
    const { coef, loss } = tokenLoss('ppo', {}, { target_tokens: [1], logprobs: [-2], advantages: [1] })(Float32Array.from([-1]));
    expect(coef[0]).toBe(0);
    expect(loss[0]).toBeCloseTo(-1.2, 6);
  });

  it('refuses a config value that is not a number, or clip thresholds the wrong way round, as the caller’s mistake', () => {
    expect(() => tokenLoss('ppo', { clip_low_threshold: 'x' }, inputs)).toThrow(/^user: loss_fn_config.clip_low_threshold must be a number/);
    expect(() => tokenLoss('ppo', { clip_low_threshold: 2, clip_high_threshold: 1 }, inputs)).toThrow(/^user: .*above clip_high_threshold/);
  });
});
