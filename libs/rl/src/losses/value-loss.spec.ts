import { expectClose, F64, finiteDiff } from '../testing/golden';
import { computeValueLoss } from './value-loss';

describe('clipped value loss', () => {
  test('dVpreds matches finite differences of the loss', () => {
    const input = { batch: 2, seqLen: 3, vpreds: [0.1, 0.9, -0.4, 1.2, 0.3, 0], returns: [1, 1, 0, -0.5, 0.2, 0], values: [0, 0.8, 0, 1, 0, 0], responseMask: [1, 1, 0, 1, 1, 0] };
    for (const mode of ['token-mean', 'seq-mean-token-mean'] as const) {
      const r = computeValueLoss(input, 0.2, mode);
      const fd = finiteDiff((v) => computeValueLoss({ ...input, vpreds: v }, 0.2, mode).loss, input.vpreds);
      expectClose(r.dVpreds, fd, { rtol: 1e-5, atol: 1e-8 }, `${mode} own FD`);
    }
  });

  test('clipped side wins: prediction far from the old value gets no gradient', () => {
    // old value 0, clip 0.2, return 1: vpred -0.5 → unclipped error 1.5² < clipped (−0.2 − 1)²? no: 2.25 > 1.44 → unclipped wins
    const a = computeValueLoss({ batch: 1, seqLen: 1, vpreds: [-0.5], returns: [1], values: [0], responseMask: [1] }, 0.2);
    expectClose(a.dVpreds, [-1.5], F64, 'unclipped grad');
    // vpred 1.5 overshoots the return; the clipped prediction 0.2 is worse → clipped wins, gradient 0
    const b = computeValueLoss({ batch: 1, seqLen: 1, vpreds: [1.5], returns: [1], values: [0], responseMask: [1] }, 0.2);
    expectClose(b.loss, 0.5 * 0.64, F64, 'loss');
    expect(b.dVpreds[0]).toBe(0);
    expect(b.vfClipfrac).toBeCloseTo(1);
  });
});
