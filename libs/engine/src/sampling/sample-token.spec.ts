import { Prng } from '../util/prng';
import { drawToken, drawTokens } from './sample-token';
import { loadEngineAddon } from '../native/addon';

const logits = new Float32Array([2.0, 1.0, 0.5, 0.0, -1.0]);
const logZ = Math.log(Array.from(logits).reduce((s, x) => s + Math.exp(x), 0));

function histogram(params: { temperature: number; topK: number; topP: number }, n = 4000): number[] {
  const rng = new Prng(3);
  const counts = new Array(logits.length).fill(0);
  for (let i = 0; i < n; i++) counts[drawToken(logits, params, rng).token]++;
  return counts.map((c) => c / n);
}

describe('drawToken', () => {
  it('greedy takes the argmax; its log-prob is the raw log-softmax', () => {
    const d = drawToken(logits, { temperature: 0, topK: 0, topP: 1 }, new Prng(1));
    expect(d.token).toBe(0);
    expect(d.logProb).toBeCloseTo(2 - logZ, 10);
    expect(d.samplingLogProb).toBe(0);
  });

  it('samples at temperature 1 with the softmax frequencies', () => {
    const freq = histogram({ temperature: 1, topK: 0, topP: 1 });
    Array.from(logits).forEach((x, i) => expect(Math.abs(freq[i] - Math.exp(x - logZ))).toBeLessThan(0.03));
  });

  it('top-k keeps only the k best', () => {
    const freq = histogram({ temperature: 1, topK: 2, topP: 1 });
    expect(freq[2] + freq[3] + freq[4]).toBe(0);
    const p0 = Math.exp(2) / (Math.exp(2) + Math.exp(1));
    expect(Math.abs(freq[0] - p0)).toBeLessThan(0.03);
  });

  it('top-p keeps the smallest prefix reaching p', () => {
    // probabilities ≈ [0.586, 0.216, 0.131, 0.079, 0.029]: p = 0.7 needs the first two
    const freq = histogram({ temperature: 1, topK: 0, topP: 0.7 });
    expect(freq[2] + freq[3] + freq[4]).toBe(0);
    expect(freq[1]).toBeGreaterThan(0.2);
    // p = 0.5 is reached by the first token alone
    expect(histogram({ temperature: 1, topK: 0, topP: 0.5 })[0]).toBe(1);
  });

  it('reports the raw log-prob and the filtered, tempered sampling log-prob separately', () => {
    const rng = new Prng(5);
    for (let i = 0; i < 50; i++) {
      const d = drawToken(logits, { temperature: 0.5, topK: 3, topP: 1 }, rng);
      expect(d.logProb).toBeCloseTo(logits[d.token] - logZ, 6);
      const z = [0, 1, 2].reduce((s, j) => s + Math.exp(logits[j] / 0.5), 0);
      expect(d.samplingLogProb).toBeCloseTo(logits[d.token] / 0.5 - Math.log(z), 6);
    }
  });

  it('low temperature concentrates, high temperature flattens', () => {
    expect(histogram({ temperature: 0.1, topK: 0, topP: 1 })[0]).toBeGreaterThan(0.99);
    expect(histogram({ temperature: 10, topK: 0, topP: 1 })[4]).toBeGreaterThan(0.12);
  });

  it('keeps ties at the k-th value', () => {
    const tied = new Float32Array([1, 1, 1, 0]);
    const rng = new Prng(9);
    const seen = new Set<number>();
    for (let i = 0; i < 300; i++) seen.add(drawToken(tied, { temperature: 1, topK: 1, topP: 1 }, rng).token);
    expect([...seen].sort()).toEqual([0, 1, 2]);
  });
});

describe('drawToken with vocabLimit', () => {
  it('never draws an id at or past the limit, and reports log-probs of the whole distribution', () => {
    const logits = new Float32Array([0, 1, 5, 9]); // ids 3 (and 2) carry most of the mass
    const logZ = Math.log(logits.reduce((s, x) => s + Math.exp(x), 0));
    const rng = new Prng(1);
    for (let i = 0; i < 200; i++) {
      const d = drawToken(logits, { temperature: 1, topK: 0, topP: 1, vocabLimit: 2 }, rng);
      expect(d.token).toBeLessThan(2);
      expect(d.logProb).toBeCloseTo(logits[d.token] - logZ, 5);
      // The sampled distribution is renormalised over ids 0 and 1.
      expect(d.samplingLogProb).toBeCloseTo(logits[d.token] - Math.log(Math.exp(0) + Math.exp(1)), 5);
    }
    expect(drawToken(logits, { temperature: 0, topK: 0, topP: 1, vocabLimit: 3 }, rng).token).toBe(2);
  });
});

const describeIfNative = loadEngineAddon().ok ? describe : describe.skip;

describeIfNative('drawTokens in the native addon', () => {
  // 3 rows over a 5,000-id vocabulary (several of the native search's chunks), drawn among the first
  // 4,000 ids, at temperatures 0 (greedy), 0.7 and 1: the same tokens as drawToken from the same
  // generators, log-probs to 1e-5 (float lanes against JavaScript's doubles).
  const [rows, vocab] = [3, 5000];
  const rng = new Prng(9);
  const values = Float32Array.from({ length: rows * vocab }, () => rng.normal() * 3);

  it.each([0, 0.7, 1])('matches drawToken at temperature %s, rows marked done left alone', (temperature) => {
    const params = { temperature, topK: 0, topP: 1, vocabLimit: 4000 };
    for (let seed = 0; seed < 20; seed++) {
      const done = Uint8Array.from([0, seed % 2, 0]);
      const mine = Array.from({ length: rows }, (_, r) => new Prng(seed * 10 + r));
      const theirs = Array.from({ length: rows }, (_, r) => new Prng(seed * 10 + r));
      const got = drawTokens(values, rows, params, mine, done);
      for (let r = 0; r < rows; r++) {
        if (done[r]) {
          expect(got[r]).toBeUndefined();
          continue;
        }
        const want = drawToken(values.subarray(r * vocab, (r + 1) * vocab), params, theirs[r]);
        expect(got[r]!.token).toBe(want.token);
        expect(got[r]!.token).toBeLessThan(4000);
        expect(Math.abs(got[r]!.logProb - want.logProb)).toBeLessThan(1e-5);
        expect(Math.abs(got[r]!.samplingLogProb - want.samplingLogProb)).toBeLessThan(1e-5);
      }
    }
  });
});
