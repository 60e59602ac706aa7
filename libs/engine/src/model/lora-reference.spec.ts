import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { peftKey, type LoraFactors } from '../io/peft-adapter';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { surrogateLoss } from '../train/logprobs';
import { validateModelConfig } from './model-config';
import type { TokenBatch } from './token-batch';
import { Model } from './transformer';
import type { NamedWeights, WeightTensor } from './weights';

type Json = { shape: number[]; data: number[] };

interface LoraGoldenCase {
  name: string;
  config: Record<string, unknown>;
  weights: Record<string, Json>;
  lora: { r: number; alpha: number; targetModules: string[]; factors: Record<string, { A: Json; B: Json }> };
  batchSize: number;
  seqLen: number;
  ids: number[];
  mask: number[];
  realPositions: number[];
  logitsAtReal: number[];
  logProbs: number[];
  valid: number[];
  logProbCoef: number[];
  grads: Array<{ module: string; factor: 'A' | 'B'; index: number; grad: number }>;
}

const here = dirname(fileURLToPath(import.meta.url));
const cases: LoraGoldenCase[] = JSON.parse(readFileSync(join(here, '..', '__golden__', 'lora.json'), 'utf8')).cases;
const tensor = (j: Json): WeightTensor => ({ shape: j.shape, data: Float32Array.from(j.data) });

function load(c: LoraGoldenCase): { model: Model; batch: TokenBatch } {
  const weights: NamedWeights = new Map(Object.entries(c.weights).map(([k, v]) => [k, tensor(v)]));
  const model = Model.fromWeights(validateModelConfig(c.config), weights);
  const factors = new Map<string, LoraFactors>(Object.entries(c.lora.factors).map(([m, f]) => [m, { A: tensor(f.A), B: tensor(f.B) }]));
  model.loadLora({
    config: { r: c.lora.r, lora_alpha: c.lora.alpha, target_modules: c.lora.targetModules, base_model_name_or_path: null, lora_dropout: 0, use_rslora: false },
    weights: factors,
  });
  return { model, batch: { batchSize: c.batchSize, seqLen: c.seqLen, ids: Int32Array.from(c.ids), mask: Uint8Array.from(c.mask) } };
}

function logitsAtReal(model: Model, batch: TokenBatch, c: LoraGoldenCase): Float32Array {
  const v = model.config.vocab_size;
  const all = tf.tidy(() => model.logits(batch).dataSync());
  const got = new Float32Array(c.realPositions.length * v);
  c.realPositions.forEach((p, i) => got.set(all.subarray(p * v, (p + 1) * v), i * v));
  return got;
}

describe.each(TEST_BACKENDS)('LoRA against the NumPy float64 reference on %s', (backend) => {
  useBackend(backend);

  describe.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    let model: Model;
    let batch: TokenBatch;
    beforeAll(() => ({ model, batch } = load(c)));
    afterAll(() => model.dispose());

    it('logits and log-probs under the adapter match to 1e-4', () => {
      expect(maxAbsDiff(logitsAtReal(model, batch, c), c.logitsAtReal)).toBeLessThan(1e-4);
      const s = model.scoreTokens(batch);
      expect(Array.from(s.valid)).toEqual(c.valid);
      expect(maxAbsDiff(s.logProbs, c.logProbs)).toBeLessThan(1e-4);
    });

    it('gradients with respect to the factors match finite differences', () => {
      const vars = model.namedVariables();
      const { value, grads } = tf.variableGrads(() => surrogateLoss(model, batch, { logProbCoef: c.logProbCoef }).loss, [...vars.values()]);
      const scale = Math.max(...c.grads.map((g) => Math.abs(g.grad)));
      let worst = 0;
      for (const g of c.grads) {
        const variable = vars.get(peftKey(g.module, g.factor))!;
        // Factors are held transposed (A [in, r], B [r, out]); map PEFT's row-major index.
        const [rows, cols] = c.lora.factors[g.module][g.factor].shape;
        const index = (g.index % cols) * rows + Math.floor(g.index / cols);
        worst = Math.max(worst, Math.abs(grads[variable.name].dataSync()[index] - g.grad) / scale);
      }
      tf.dispose([value, ...Object.values(grads)]);
      expect(worst).toBeLessThan(1e-4);
    });

    it('merged weights give the same logits within 1e-4 of the reference', () => {
      const copy = Model.fromWeights(model.config, model.exportWeights());
      copy.loadLora(model.exportLora());
      copy.mergeLora();
      expect(maxAbsDiff(logitsAtReal(copy, batch, c), c.logitsAtReal)).toBeLessThan(1e-4);
      copy.dispose();
    });
  });
});
