import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { surrogateLoss } from '../train/logprobs';
import { validateModelConfig } from './model-config';
import type { TokenBatch } from './token-batch';
import { Model } from './transformer';
import type { NamedWeights } from './weights';

interface GoldenCase {
  name: string;
  config: Record<string, unknown>;
  weights: Record<string, { shape: number[]; data: number[] }>;
  batchSize: number;
  seqLen: number;
  ids: number[];
  mask: number[];
  realPositions: number[];
  logitsAtReal: number[];
  logProbs: number[];
  entropy: number[];
  values: number[] | null;
  valueCoef: number[] | null;
  valid: number[];
  logProbCoef: number[];
  entropyCoef: number[];
  loss: number;
  grads: Array<{ weight: string; index: number; grad: number }>;
}

const here = dirname(fileURLToPath(import.meta.url));
const cases: GoldenCase[] = JSON.parse(readFileSync(join(here, '..', '__golden__', 'transformer.json'), 'utf8')).cases;

function load(c: GoldenCase): { model: Model; batch: TokenBatch } {
  const weights: NamedWeights = new Map(Object.entries(c.weights).map(([k, v]) => [k, { shape: v.shape, data: Float32Array.from(v.data) }]));
  const model = Model.fromWeights(validateModelConfig(c.config), weights);
  const batch: TokenBatch = { batchSize: c.batchSize, seqLen: c.seqLen, ids: Int32Array.from(c.ids), mask: Uint8Array.from(c.mask) };
  return { model, batch };
}

describe.each(TEST_BACKENDS)('transformer against the NumPy float64 reference on %s', (backend) => {
  useBackend(backend);

  describe.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    let model: Model;
    let batch: TokenBatch;
    beforeAll(() => ({ model, batch } = load(c)));
    afterAll(() => model.dispose());

    it('logits at every real position match to 1e-4', () => {
      const v = model.config.vocab_size;
      const all = tf.tidy(() => model.logits(batch).dataSync());
      const got = new Float32Array(c.realPositions.length * v);
      c.realPositions.forEach((p, i) => got.set(all.subarray(p * v, (p + 1) * v), i * v));
      expect(maxAbsDiff(got, c.logitsAtReal)).toBeLessThan(1e-4);
    });

    it('per-token log-probs and entropies match to 1e-4, zero where undefined', () => {
      const s = model.scoreTokens(batch);
      expect(Array.from(s.valid)).toEqual(c.valid);
      expect(maxAbsDiff(s.logProbs, c.logProbs)).toBeLessThan(1e-4);
      expect(maxAbsDiff(s.entropy, c.entropy)).toBeLessThan(1e-4);
      if (c.values) expect(maxAbsDiff(s.values!, c.values)).toBeLessThan(1e-4);
      else expect(s.values).toBeUndefined();
    });

    it('gradients of a log-prob + entropy (+ value) loss match finite differences', () => {
      const vars = model.namedVariables();
      const coefs = { logProbCoef: c.logProbCoef, entropyCoef: c.entropyCoef, ...(c.valueCoef ? { valueCoef: c.valueCoef } : {}) };
      const { value, grads } = tf.variableGrads(() => surrogateLoss(model, batch, coefs).loss, [...vars.values()]);
      expect(Math.abs(value.dataSync()[0] - c.loss)).toBeLessThan(1e-4 * Math.max(1, Math.abs(c.loss)));
      const scale = Math.max(...c.grads.map((g) => Math.abs(g.grad)));
      let worst = 0;
      for (const g of c.grads) {
        const variable = vars.get(g.weight)!;
        const shape = c.weights[g.weight].shape;
        // Linear weights are stored transposed ([in, out]); map the HF [out, in] flat index.
        let index = g.index;
        if (shape.length === 2 && g.weight !== 'model.embed_tokens.weight' && g.weight !== 'lm_head.weight') {
          const [rows, cols] = shape;
          const r = Math.floor(g.index / cols);
          const col = g.index % cols;
          index = col * rows + r;
        }
        const got = grads[variable.name].dataSync()[index];
        worst = Math.max(worst, Math.abs(got - g.grad) / scale);
      }
      tf.dispose([value, ...Object.values(grads)]);
      expect(worst).toBeLessThan(1e-4);
    });
  });
});
