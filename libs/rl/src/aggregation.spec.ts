import { aggLoss, aggWeights, isLossAggMode, LOSS_AGG_MODES, type LossAggMode } from './aggregation';
import { isRlError } from './errors';
import { maskedMean, maskedMeanRows, maskedVar, maskedWhiten } from './masked';
import { expectClose, F64 } from './testing/golden';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return isRlError(e) ? e.code : `not an RlError: ${String(e)}`;
  }
  return undefined;
};

describe('aggregation semantics', () => {
  const shape = { batch: 2, seqLen: 3 };
  test('seq-mean-token-sum-norm divides the masked sum by seqLen (or loss_scale_factor) only, as verl', () => {
    const w = aggWeights([1, 1, 0, 1, 0, 0], shape, 'seq-mean-token-sum-norm');
    // no division by the 2 rows: each unmasked token weighs 1 / seqLen
    expectClose(w, [1 / 3, 1 / 3, 0, 1 / 3, 0, 0], F64, 'norm weights');
    // dp_size and global_batch_size do not apply to this mode
    const g = aggWeights([1, 1, 0, 1, 0, 0], shape, 'seq-mean-token-sum-norm', { dpSize: 4, globalBatchSize: 16, lossScaleFactor: 10 });
    expectClose(g, [0.1, 0.1, 0, 0.1, 0, 0], F64, 'norm weights with global info');
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
    expect(codeOf(() => aggLoss([1], [1], { batch: 1, seqLen: 1 }, 'token-sum' as LossAggMode))).toBe('RL_UNKNOWN_NAME');
    expect(codeOf(() => aggLoss([1, 2], [1], { batch: 1, seqLen: 2 }, 'token-mean'))).toBe('RL_INVALID_INPUT');
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

  test('whitening guard: fewer than two tokens gives zeros; masked_var raises as verl does', () => {
    expect(Array.from(maskedWhiten([5, 6], [0, 0]))).toEqual([0, 0]);
    expect(Array.from(maskedWhiten([5, 6], [1, 0]))).toEqual([0, 0]);
    expect(codeOf(() => maskedVar([5, 6], [1, 0]))).toBe('RL_DEGENERATE_INPUT');
    expect(codeOf(() => maskedVar([5, 6], [0, 0]))).toBe('RL_DEGENERATE_INPUT');
    expectClose(maskedVar([5, 6], [1, 0], false), 0, F64, 'biased variance of one token');
  });
});
