import { isRlError } from '../errors';
import { expectClose, finiteDiff, loadGolden, reportWorst } from '../testing/golden';
import { checkTinkerLossInputs, resolveTinkerLossConfig, tinkerBatchLoss, tinkerLoss, TINKER_LOSS_FNS } from './tinker';

/** Golden cases from `reference/tinker_reference.py`: Tinker's documented torch code, float64, autograd gradients. */
interface TinkerCase {
  name: string;
  loss_fn: string;
  config: Record<string, number>;
  logprobs: number[];
  inputs: Record<string, number[]>;
  loss: number;
  elementwise: number[];
  grad: number[];
}

const cases = loadGolden<TinkerCase[]>('tinker_losses.json');
const TOL = { rtol: 1e-9, atol: 1e-12 };
afterAll(reportWorst);

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return isRlError(e) ? `${e.code}:${e.field ?? ''}` : String(e);
  }
  return 'none';
}

describe('Tinker losses against the torch reference', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const out = tinkerLoss(c.loss_fn, { logProbs: c.logprobs, inputs: c.inputs }, c.config);
    expectClose(out.loss, c.loss, TOL, `${c.name} loss`, 'tinker');
    expectClose(out.elementwiseLoss, c.elementwise, TOL, `${c.name} elementwise`, 'tinker');
    expectClose(out.dLogProb, c.grad, TOL, `${c.name} grad`, 'tinker');
  });

  test('every loss is covered, with clipping active on both sides somewhere', () => {
    expect(new Set(cases.map((c) => c.loss_fn))).toEqual(new Set(TINKER_LOSS_FNS));
    // Some PPO token lies outside the clip range, so the reference exercised the zero-gradient branch.
    const ppo = cases.filter((c) => c.loss_fn === 'ppo');
    const clippedZero = ppo.some((c) => c.grad.some((g, i) => g === 0 && c.inputs.advantages[i] !== 0));
    expect(clippedZero).toBe(true);
  });

  test('gradients equal finite differences away from the kinks (losses with no stop-gradient)', () => {
    for (const c of cases.filter((x) => ['cross_entropy', 'importance_sampling', 'dro'].includes(x.loss_fn))) {
      const f = (x: Float64Array) => tinkerLoss(c.loss_fn, { logProbs: x, inputs: c.inputs }, c.config).loss;
      expectClose(
        tinkerLoss(c.loss_fn, { logProbs: c.logprobs, inputs: c.inputs }, c.config).dLogProb,
        finiteDiff(f, c.logprobs),
        { rtol: 1e-6, atol: 1e-8 },
        `${c.name} FD`,
        'tinker FD',
      );
    }
  });
});

describe('Tinker loss semantics', () => {
  const datum = { logProbs: [-1, -2, -0.5], inputs: { logprobs: [-1.2, -2, -0.1], advantages: [1, 0, -2] } };

  test('sums over tokens and datums, never means', () => {
    const one = tinkerLoss('importance_sampling', datum);
    const two = tinkerBatchLoss('importance_sampling', [datum, datum]);
    expect(two.loss).toBeCloseTo(2 * one.loss, 12);
    expect(one.loss).toBeCloseTo(-Math.exp(0.2) * 1 + 0 + Math.exp(-0.4) * 2, 12);
    const ce = tinkerLoss('cross_entropy', { logProbs: [-1, -3], inputs: { weights: [1, 1] } });
    expect(ce.loss).toBe(4);
    expect(Array.from(ce.dLogProb)).toEqual([-1, -1]);
  });

  test('a zero advantage contributes nothing even where the ratio overflows', () => {
    const out = tinkerLoss('ppo', { logProbs: [-1, -1], inputs: { logprobs: [-1000, -1], advantages: [0, 1] } });
    expect(out.elementwiseLoss[0]).toBe(0);
    expect(out.dLogProb[0]).toBe(0);
    expect(Number.isFinite(out.loss)).toBe(true);
  });

  test('config: defaults, unknown keys and bad values are typed errors naming the key', () => {
    expect(resolveTinkerLossConfig('ppo')).toEqual({ lossFn: 'ppo', clipLow: 0.8, clipHigh: 1.2, beta: 0 });
    expect(resolveTinkerLossConfig('cispo')).toMatchObject({ clipLow: 0, clipHigh: 4 });
    expect(resolveTinkerLossConfig('dro')).toMatchObject({ beta: 0.1 });
    expect(code(() => resolveTinkerLossConfig('ppo', { clip_ratio: 0.2 }))).toBe('RL_INVALID_CONFIG:clip_ratio');
    expect(code(() => resolveTinkerLossConfig('cross_entropy', { beta: 1 }))).toBe('RL_INVALID_CONFIG:beta');
    expect(code(() => resolveTinkerLossConfig('ppo', { clip_low_threshold: 1.3 }))).toBe('RL_INVALID_CONFIG:clip_low_threshold');
    expect(code(() => resolveTinkerLossConfig('ppo', { clip_high_threshold: 'wide' }))).toBe('RL_INVALID_CONFIG:clip_high_threshold');
    expect(code(() => resolveTinkerLossConfig('dro', { beta: -1 }))).toBe('RL_INVALID_CONFIG:beta');
  });

  test('stable_reinforce and custom are refused naming the alternatives; other names are unknown', () => {
    expect(code(() => tinkerLoss('stable_reinforce', datum))).toBe('RL_NOT_IMPLEMENTED:loss_fn');
    try {
      resolveTinkerLossConfig('stable_reinforce');
    } catch (e) {
      expect((e as Error).message).toMatch(/importance_sampling, ppo, cispo, gspo or dro/);
    }
    expect(code(() => tinkerLoss('custom', datum))).toBe('RL_NOT_IMPLEMENTED:loss_fn');
    expect(code(() => tinkerLoss('grpo', datum))).toBe('RL_UNKNOWN_NAME:loss_fn');
  });

  test('inputs: missing, unknown, wrong length and non-finite ones name the input (and the datum in a batch)', () => {
    expect(code(() => tinkerLoss('ppo', { logProbs: [-1], inputs: { logprobs: [-1] } }))).toBe('RL_INVALID_INPUT:advantages');
    expect(code(() => tinkerLoss('ppo', { logProbs: [-1], inputs: { logprobs: [-1], advantages: [1], reward: [1] } }))).toBe('RL_INVALID_INPUT:reward');
    expect(code(() => tinkerLoss('ppo', { logProbs: [-1], inputs: { logprobs: [-1, -2], advantages: [1] } }))).toBe('RL_INVALID_INPUT:logprobs');
    expect(code(() => tinkerLoss('ppo', { logProbs: [-1], inputs: { logprobs: [NaN], advantages: [1] } }))).toBe('RL_INVALID_INPUT:logprobs');
    expect(code(() => tinkerLoss('gspo', { logProbs: [-1], inputs: { logprobs: [-1], advantages: [1] } }))).toBe('RL_INVALID_INPUT:sequence_ratio_mask');
    expect(code(() => tinkerLoss('gspo', { logProbs: [-1], inputs: { logprobs: [-1], advantages: [1], sequence_ratio_mask: [0] } }))).toBe(
      'RL_DEGENERATE_INPUT:sequence_ratio_mask',
    );
    // target_tokens travels with the inputs and is the engine's business; weights are accepted by the RL losses.
    expect(() => checkTinkerLossInputs('ppo', { target_tokens: [3], logprobs: [-1], advantages: [1], weights: [1] }, 1)).not.toThrow();
    try {
      tinkerBatchLoss('importance_sampling', [datum, { logProbs: [-1], inputs: { logprobs: [-1] } }]);
    } catch (e) {
      expect((e as Error).message).toMatch(/^datum 1: /);
    }
  });
});
