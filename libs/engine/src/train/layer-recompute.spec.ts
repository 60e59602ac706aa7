import * as tf from '@tensorflow/tfjs-core';
import { modelPreset, type ModelConfig } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { initBackend } from '../backend';
import { wasmHeapUsage } from '../kernels/wasm-heap';
import { crossEntropyCoefficients, type CurrentScores } from './logprobs';
import { maxScoringRows, scoringPassBytes, trainingPassBytes } from '../model/memory-plan';
import { sample } from '../sampling/sampler';
import { Trainer } from './trainer';
import { recomputedGradients } from './layer-recompute';

const sequences = [
  [1, 4, 9, 16, 25, 6, 17, 30],
  [2, 3, 5, 7, 11, 13],
  [31, 30, 29, 28, 27, 26, 25],
];

const ALL_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** A PPO-like loss: coefficients that depend on the current log-probs, plus an entropy term. */
const coefficients = ({ logProbs }: CurrentScores) => ({
  logProbCoef: logProbs.map((lp, i) => (i % 3 === 0 ? 0 : Math.exp(lp) - 0.5)),
  entropyCoef: logProbs.map((_, i) => (i % 2 === 0 ? -0.01 : 0.02)),
});

/** Gradients (by parameter name) and the loss of one pass, with or without recomputation. */
function pass(model: Model, recompute: boolean): { loss: number; grads: Map<string, Float32Array>; logProbs: Float32Array; recomputed: boolean } {
  const trainer = new Trainer(model, { lr: 0, recompute });
  const r = trainer.accumulate(padBatch(sequences), coefficients);
  const grads = new Map<string, Float32Array>();
  for (const [name, g] of (trainer as unknown as { accumulated: Map<string, tf.Tensor> }).accumulated) grads.set(name, Float32Array.from(g.dataSync()));
  trainer.dispose();
  return { loss: r.loss, grads, logProbs: r.logProbs, recomputed: r.recomputed };
}

function expectSame(a: ReturnType<typeof pass>, b: ReturnType<typeof pass>): void {
  expect(a.recomputed).toBe(false);
  expect(b.recomputed).toBe(true);
  expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-6);
  expect(maxAbsDiff(a.logProbs, b.logProbs)).toBeLessThan(1e-6);
  expect([...b.grads.keys()].sort()).toEqual([...a.grads.keys()].sort());
  for (const [name, g] of a.grads) {
    const scale = Math.max(1e-6, ...Array.from(g, Math.abs));
    expect(maxAbsDiff(b.grads.get(name)!, g) / scale).toBeLessThan(1e-5);
  }
}

describe.each(TEST_BACKENDS)('recomputing layers in the backward pass on %s', (backend) => {
  useBackend(backend);

  it.each([
    ['qwen2-style, untied, biases', modelPreset('tiny-test')],
    ['llama-style, tied', { ...modelPreset('bench-a'), vocab_size: 32, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3 } as ModelConfig],
  ])('gives the whole-graph gradients when training in full (%s)', (_name, config) => {
    const model = Model.init(config, 3);
    model.addValueHead(4);
    expectSame(pass(model, false), pass(model, true));
    model.dispose();
  });

  it('gives the whole-graph gradients of a LoRA adapter on a frozen base', () => {
    const model = Model.init(modelPreset('tiny-test'), 5, { trainable: false });
    model.addLora({ r: 2, alpha: 4, targetModules: ALL_LINEARS, seed: 6 });
    // Non-zero B so that A's gradients are not zero either.
    for (const v of model.namedVariables().values()) tf.tidy(() => v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', 7)));
    expectSame(pass(model, false), pass(model, true));
    model.dispose();
  });

  it('gives the same gradients whichever top layers keep their tapes', () => {
    const config = { ...modelPreset('tiny-test'), num_hidden_layers: 3 } as ModelConfig;
    const model = Model.init(config, 11);
    const vars = [...model.namedVariables().values()];
    const batch = padBatch(sequences);
    const run = (k: number) => {
      const r = recomputedGradients(model, batch, coefficients, vars, k);
      const grads = new Map(Object.entries(r.grads).map(([n, g]) => [n, Float32Array.from(g.dataSync())]));
      tf.dispose(Object.values(r.grads));
      return { loss: r.loss, grads, logProbs: r.lpNext };
    };
    const all = run(0);
    const before = tf.memory().numTensors;
    for (const k of [1, 2, 3]) {
      const some = run(k);
      expect(Math.abs(some.loss - all.loss)).toBeLessThan(1e-6);
      expect(maxAbsDiff(some.logProbs, all.logProbs)).toBeLessThan(1e-6);
      expect([...some.grads.keys()].sort()).toEqual([...all.grads.keys()].sort());
      for (const [name, g] of all.grads) {
        const scale = Math.max(1e-6, ...Array.from(g, Math.abs));
        expect(maxAbsDiff(some.grads.get(name)!, g) / scale).toBeLessThan(1e-5);
      }
    }
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('leaves no tensor behind', () => {
    const model = Model.init(modelPreset('tiny-test'), 8);
    const trainer = new Trainer(model, { lr: 1e-3, recompute: true });
    const batch = padBatch(sequences);
    trainer.trainStep(batch, coefficients);
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) trainer.trainStep(batch, coefficients);
    expect(tf.memory().numTensors).toBe(before);
    trainer.dispose();
    model.dispose();
  });
});

describe('a batch larger than the heap allows', () => {
  const budgetOf = () => wasmHeapUsage().budgetBytes;
  let saved: number;
  beforeAll(async () => {
    await initBackend({ backend: 'wasm' });
    saved = budgetOf();
  });
  afterAll(async () => {
    await initBackend({ backend: 'wasm', memoryBytes: saved });
  });

  it('runs fixed coefficients in several passes with the same gradients, and refuses a coefficient function that cannot fit', async () => {
    const config = { ...modelPreset('tiny-test'), hidden_size: 64, intermediate_size: 128 };
    const model = Model.init(config, 9);
    const batch = padBatch(Array.from({ length: 12 }, (_, r) => Array.from({ length: 40 }, (_, i) => (i * 5 + r) % 32)));
    const coefs = crossEntropyCoefficients(batch);
    const whole = new Trainer(model, { lr: 0 });
    const a = whole.accumulate(batch, coefs);
    const want = new Map([...(whole as unknown as { accumulated: Map<string, tf.Tensor> }).accumulated].map(([k, g]) => [k, Float32Array.from(g.dataSync())]));
    whole.dispose();

    const trainer = new Trainer(model, { lr: 0 });
    const fixed = trainer.maxMicroBatchRows(batch.seqLen);
    // A budget that leaves room for about 3 of the 12 rows.
    const perRow = trainingPassBytes(config, 1, 40, 0).recompute - trainingPassBytes(config, 0, 40, 0).recompute;
    await initBackend({ backend: 'wasm', memoryBytes: wasmHeapUsage().liveBytes + trainingPassBytes(config, 0, 40, 1e5).recompute + 3.5 * perRow });
    expect(trainer.maxMicroBatchRows(batch.seqLen)).toBeLessThan(Math.min(fixed, 12));
    const b = trainer.accumulate(batch, coefs);
    expect(trainer.pending).toBeGreaterThan(1);
    expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-5);
    expect(maxAbsDiff(a.logProbs, b.logProbs)).toBeLessThan(1e-6);
    for (const [name, g] of (trainer as unknown as { accumulated: Map<string, tf.Tensor> }).accumulated) {
      expect(maxAbsDiff(g.dataSync(), want.get(name)!)).toBeLessThan(1e-5);
    }
    expect(() => trainer.accumulate(batch, () => coefs)).toThrow(expect.objectContaining({ code: 'ENGINE_OUT_OF_MEMORY' }));
    trainer.dispose();
    model.dispose();
  });

  it('scores and samples a slice of rows at a time, with the same results', async () => {
    const config = { ...modelPreset('tiny-test'), hidden_size: 64, intermediate_size: 128 };
    const model = Model.init(config, 10, { trainable: false });
    const prompts = Array.from({ length: 10 }, (_, r) => Array.from({ length: 6 + (r % 4) }, (_, i) => (i * 3 + r) % 32));
    const batch = padBatch(prompts);
    const options = { maxNewTokens: 5, temperature: 1, seed: 3, stopTokenIds: [] };
    await initBackend({ backend: 'wasm', memoryBytes: saved });
    const whole = model.scoreTokens(batch);
    const sampledWhole = sample(model, prompts, options);
    await initBackend({ backend: 'wasm', memoryBytes: wasmHeapUsage().liveBytes + 3 * scoringPassBytes(config, 1, batch.seqLen) });
    expect(maxScoringRows(config, batch.seqLen)).toBeLessThan(10);
    const parts = model.scoreTokens(batch);
    expect(maxAbsDiff(parts.logProbs, whole.logProbs)).toBeLessThan(1e-6);
    expect(maxAbsDiff(parts.entropy, whole.entropy)).toBeLessThan(1e-6);
    expect(Array.from(parts.valid)).toEqual(Array.from(whole.valid));
    expect(sample(model, prompts, options).map((o) => o.tokens)).toEqual(sampledWhole.map((o) => o.tokens));
    model.dispose();
  });
});
