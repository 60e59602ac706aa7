import type { LossAggMode } from '../aggregation';
import { expectClose, f32, f64, F32, F64, F64_GRAD, finiteDiff, loadGolden, reportWorst } from '../testing/golden';
import { computeValueLoss } from './value-loss';

interface VlCase {
  name: string;
  lossAggMode: LossAggMode;
  cliprangeValue: number;
  batch: number;
  seqLen: number;
  inputs: { vpreds: number[]; returns: number[]; values: number[]; responseMask: number[] };
  expected: { loss: number; vfClipfrac: number; dVpreds: number[] };
}

const cases = loadGolden<VlCase[]>('value_loss.json');
afterAll(reportWorst);

describe('clipped value loss vs verl reference', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const input = { batch: c.batch, seqLen: c.seqLen, vpreds: f64(c.inputs.vpreds), returns: f64(c.inputs.returns), values: f64(c.inputs.values), responseMask: c.inputs.responseMask };
    const r = computeValueLoss(input, c.cliprangeValue, c.lossAggMode);
    expectClose(r.loss, c.expected.loss, F64, `${c.name} loss`, 'value loss');
    expectClose(r.vfClipfrac, c.expected.vfClipfrac, F64, `${c.name} clipfrac`, 'value loss');
    expectClose(r.dVpreds, c.expected.dVpreds, F64_GRAD, `${c.name} dVpreds`, 'value loss grad');
    const fd = finiteDiff((v) => computeValueLoss({ ...input, vpreds: v }, c.cliprangeValue, c.lossAggMode).loss, input.vpreds);
    expectClose(r.dVpreds, fd, { rtol: 1e-5, atol: 1e-8 }, `${c.name} own FD`, 'value loss own FD');
    const r32 = computeValueLoss({ ...input, vpreds: f32(c.inputs.vpreds), returns: f32(c.inputs.returns), values: f32(c.inputs.values) }, c.cliprangeValue, c.lossAggMode);
    expectClose(r32.loss, c.expected.loss, F32, `${c.name} loss f32`, 'value loss f32');
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
