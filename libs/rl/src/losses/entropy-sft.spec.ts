import type { LossAggMode } from '../aggregation';
import { expectClose, f32, f64, F32, F64, F64_GRAD, finiteDiff, loadGolden, reportWorst } from '../testing/golden';
import { computeEntropyLoss, entropyFromLogits, entropyGradLogits } from './entropy';
import { logprobsFromLogits, sftCrossEntropyFromLogits, sftLoss } from './sft';

/** Golden cases of the SFT cross-entropy from the NumPy reference (no verl vector covers it). */
interface SftCase {
  name: string;
  vocab: number;
  lossAggMode: LossAggMode;
  batch: number;
  seqLen: number;
  inputs: { logits: number[]; labels: number[]; lossMask: number[] };
  expected: { logProbs: number[]; loss: number; dLogProb: number[]; dLogits: number[] };
}

const cases = loadGolden<SftCase[]>('sft.json');
afterAll(reportWorst);

describe('entropy from logits', () => {
  test('gradient matches finite differences; limits', () => {
    const z = [0.3, -1.2, 2.0, 0.0, 0.7];
    expectClose(
      entropyGradLogits(z, 1, 5),
      finiteDiff((x) => entropyFromLogits(x, 1, 5)[0], z),
      { rtol: 1e-6, atol: 1e-9 },
      'own FD',
      'entropy own FD',
    );
    expectClose(entropyFromLogits([5, 5, 5, 5], 1, 4), [Math.log(4)], F64, 'uniform');
    expectClose(entropyFromLogits([1e4, 0, -1e4], 1, 3), [0], F64, 'one-hot');
    expectClose(entropyFromLogits([0, -Infinity], 1, 2), [0], F64, '-inf logit');
    const loss = computeEntropyLoss({ batch: 1, seqLen: 2, vocab: 2, logits: [0, 0, 3, NaN], responseMask: [1, 0] });
    expectClose(loss.loss, Math.log(2), F64, 'masked entropy loss');
    expect(Array.from(loss.dLogits.slice(2))).toEqual([0, 0]);
  });
});

describe('SFT cross-entropy vs the NumPy reference', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const input = { batch: c.batch, seqLen: c.seqLen, vocab: c.vocab, logits: f64(c.inputs.logits), labels: c.inputs.labels, lossMask: c.inputs.lossMask };
    const r = sftCrossEntropyFromLogits(input, c.lossAggMode);
    expectClose(r.logProbs, c.expected.logProbs, F64, `${c.name} logProbs`, 'sft');
    expectClose(r.loss, c.expected.loss, F64, `${c.name} loss`, 'sft');
    expectClose(r.dLogProb, c.expected.dLogProb, F64_GRAD, `${c.name} dLogProb`, 'sft grad');
    expectClose(r.dLogits, c.expected.dLogits, F64_GRAD, `${c.name} dLogits`, 'sft grad');
    const r32 = sftCrossEntropyFromLogits({ ...input, logits: f32(c.inputs.logits) }, c.lossAggMode);
    expectClose(r32.loss, c.expected.loss, F32, `${c.name} loss f32`, 'sft f32');
  });

  test('loss on log-probs; label range checked', () => {
    const r = sftLoss({ batch: 1, seqLen: 3, logProb: [-1, -2, -3], lossMask: [0, 1, 1] });
    expectClose(r.loss, 2.5, F64, 'loss');
    expectClose(r.dLogProb, [0, -0.5, -0.5], F64, 'grad');
    expect(() => logprobsFromLogits([0, 0], [2], 1, 2)).toThrow(expect.objectContaining({ code: 'RL_INVALID_INPUT' }));
    expectClose(logprobsFromLogits([1000, 0], [1], 1, 2), [-1000], F64, 'stable');
  });
});
