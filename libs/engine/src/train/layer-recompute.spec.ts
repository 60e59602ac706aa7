import * as tf from '@tensorflow/tfjs-core';
import { modelPreset, type ModelConfig } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import type { CurrentScores } from './logprobs';
import { Trainer } from './trainer';

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
