import { aggLoss, aggWeights, isLossAggMode, LOSS_AGG_MODES, type AggOptions, type LossAggMode } from './aggregation';
import { maskedMean, maskedMeanRows, maskedVar, maskedWhiten } from './masked';
import { expectClose, f32, f64, F32, F64, F64_GRAD, loadGolden, reportWorst } from './testing/golden';

interface AggCase {
  name: string;
  mode: LossAggMode;
  batch: number;
  seqLen: number;
  options: { loss_scale_factor?: number; batch_num_tokens?: number; global_batch_size?: number; dp_size?: number };
  inputs: { lossMat: Array<number | null>; lossMask: number[] };
  expected: { loss: number; weights: number[] };
}

const cases = loadGolden<AggCase[]>('aggregation.json');
const opts = (o: AggCase['options']): AggOptions => ({
  lossScaleFactor: o.loss_scale_factor,
  batchNumTokens: o.batch_num_tokens,
  globalBatchSize: o.global_batch_size,
  dpSize: o.dp_size,
});

afterAll(reportWorst);

describe('agg_loss vs verl reference', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s (float64)', (_n, c) => {
    const r = aggLoss(f64(c.inputs.lossMat), c.inputs.lossMask, c, c.mode, opts(c.options));
    expect(Number.isFinite(r.loss)).toBe(true);
    expectClose(r.loss, c.expected.loss, F64, `${c.name} loss`, 'aggregation');
    expectClose(r.weights, c.expected.weights, F64_GRAD, `${c.name} weights`, 'aggregation');
  });

  test.each(cases.map((c) => [c.name, c] as const))('%s (float32 inputs)', (_n, c) => {
    const r = aggLoss(f32(c.inputs.lossMat), f32(c.inputs.lossMask), c, c.mode, opts(c.options));
    expectClose(r.loss, c.expected.loss, F32, `${c.name} loss f32`, 'aggregation f32');
  });
});

describe('aggregation semantics', () => {
  const shape = { batch: 2, seqLen: 3 };
  test('constant normaliser of seq-mean-token-sum-norm is seqLen by default', () => {
    const w = aggWeights([1, 1, 0, 1, 0, 0], shape, 'seq-mean-token-sum-norm');
    // 2 non-empty rows, seqLen 3: each unmasked token weighs 1 / 2 / 3
    expectClose(w, [1 / 6, 1 / 6, 0, 1 / 6, 0, 0], F64, 'norm weights');
  });

  test('fully masked rows are excluded from seq-mean denominators', () => {
    const w = aggWeights([1, 1, 0, 0, 0, 0], shape, 'seq-mean-token-sum');
    expectClose(w, [1, 1, 0, 0, 0, 0], F64, 'weights');
  });

  test('NaN and Inf under the mask never leak; all-masked gives 0 not NaN', () => {
    for (const mode of LOSS_AGG_MODES) {
      expect(aggLoss([NaN, 1, Infinity, 2, NaN, -Infinity], [0, 1, 0, 1, 0, 0], shape, mode).loss).toBeGreaterThan(0);
      const r = aggLoss([NaN, 1, 2, 3, 4, 5], [0, 0, 0, 0, 0, 0], shape, mode);
      expect(r.loss).toBe(0);
      expect(Array.from(r.weights).every((x) => x === 0)).toBe(true);
    }
  });

  test('rejects unknown modes and wrong lengths', () => {
    expect(isLossAggMode('token-mean')).toBe(true);
    expect(isLossAggMode('token-sum')).toBe(false);
    expect(() => aggLoss([1], [1], { batch: 1, seqLen: 1 }, 'token-sum' as LossAggMode)).toThrow(/loss_agg_mode/);
    expect(() => aggLoss([1, 2], [1], { batch: 1, seqLen: 2 }, 'token-mean')).toThrow(RangeError);
  });
});

describe('masked statistics (verl torch_functional)', () => {
  test('mean, var, whiten', () => {
    expectClose(maskedMean([1, 2, 3, 100], [1, 1, 1, 0]), 2, F64, 'mean');
    expectClose(maskedVar([1, 2, 3, 100], [1, 1, 1, 0]), 1, F64, 'var');
    expectClose(maskedMeanRows([1, 3, 5, 7], [1, 1, 1, 0], 2, 2), [2, 5], F64, 'rows');
    const w = maskedWhiten([1, 2, 3, 0], [1, 1, 1, 0]);
    expectClose(w, [-1, 0, 1, -2], { rtol: 1e-6, atol: 1e-7 }, 'whiten');
  });

  test('whitening guard: fewer than two tokens gives zeros (verl raises)', () => {
    expect(Array.from(maskedWhiten([5, 6], [0, 0]))).toEqual([0, 0]);
    expect(Array.from(maskedWhiten([5, 6], [1, 0]))).toEqual([0, 0]);
    expect(maskedVar([5, 6], [1, 0])).toBeNaN();
  });
});
