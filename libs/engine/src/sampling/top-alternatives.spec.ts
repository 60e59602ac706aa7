import { modelPreset } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, useBackend } from '../testing/backends';
import { promptLogprobs } from './prompt-logprobs';
import { sample } from './sampler';
import { logSumExp, topAlternatives } from './top-alternatives';

describe('topAlternatives', () => {
  it('keeps the k largest, most likely first, lower id first on ties, below the limit', () => {
    const logits = new Float32Array([0.5, 3, 1, 3, -2, 9]);
    const z = logSumExp(logits);
    expect(topAlternatives(logits, 3, z).map((a) => a.id)).toEqual([5, 1, 3]);
    expect(topAlternatives(logits, 3, z, 5).map((a) => a.id)).toEqual([1, 3, 2]);
    expect(topAlternatives(logits, 0, z)).toEqual([]);
    expect(topAlternatives(logits, 10, z)).toHaveLength(6);
    const probs = topAlternatives(logits, 6, z).reduce((a, t) => a + Math.exp(t.logProb), 0);
    expect(probs).toBeCloseTo(1, 6);
  });
});

describe.each(TEST_BACKENDS)('top log-probs and prompt log-probs on %s', (backend) => {
  useBackend(backend);
  let model: Model;
  beforeAll(() => {
    model = Model.init(modelPreset('tiny-test'), 7);
  });
  afterAll(() => model.dispose());

  it('reports the most likely tokens of each step, the greedy choice first', () => {
    const [out] = sample(model, [[1, 2, 3]], { maxNewTokens: 5, temperature: 0, seed: 1, stopTokenIds: [], topLogprobs: 4 });
    expect(out.topLogProbs).toHaveLength(5);
    out.topLogProbs!.forEach((top, i) => {
      expect(top).toHaveLength(4);
      expect(top[0].id).toBe(out.tokens[i]);
      expect(top[0].logProb).toBeCloseTo(out.logProbs[i], 5);
      for (let j = 1; j < top.length; j++) expect(top[j].logProb).toBeLessThanOrEqual(top[j - 1].logProb);
    });
    const [plain] = sample(model, [[1, 2, 3]], { maxNewTokens: 5, temperature: 0, seed: 1, stopTokenIds: [] });
    expect(plain.topLogProbs).toBeUndefined();
    expect(plain.tokens).toEqual(out.tokens);
  });

  it('scores a prompt as the trainer does, with the alternatives at each position', () => {
    const ids = [4, 9, 2, 7, 7, 1];
    const scored = promptLogprobs(model, ids, 3);
    const reference = model.scoreTokens(padBatch([ids]));
    expect(scored.logProbs[0]).toBeNull();
    expect(scored.top[0]).toBeNull();
    for (let t = 1; t < ids.length; t++) {
      expect(scored.logProbs[t]).toBeCloseTo(reference.logProbs[t], 4);
      expect(scored.top[t]).toHaveLength(3);
      expect(scored.top[t]![0].logProb).toBeGreaterThanOrEqual(scored.logProbs[t]! - 1e-6);
    }
    expect(promptLogprobs(model, [5], 2)).toEqual({ logProbs: [null], top: [null] });
    expect(() => promptLogprobs(model, [1, 100000], 2)).toThrow(/outside the vocabulary/);
  });
});
