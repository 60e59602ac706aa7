import * as tf from '@tensorflow/tfjs-core';
import { errorCode } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { Trainer } from '../train/trainer';
import { modelPreset } from './model-config';
import { padBatch } from './token-batch';
import { Model, VALUE_BIAS, VALUE_WEIGHT } from './transformer';
import { initWeights } from './weights';

const config = modelPreset('tiny-test');
const batch = padBatch([
  [1, 2, 3, 4, 5, 6],
  [7, 8, 9],
]);

describe.each(TEST_BACKENDS)('Model lifecycle on %s', (backend) => {
  useBackend(backend);

  it('exports exactly the weights it was given, in Hugging Face layout', () => {
    const weights = initWeights(config, 3);
    const model = Model.fromWeights(config, weights);
    const out = model.exportWeights();
    expect([...out.keys()]).toEqual([...weights.keys()]);
    for (const [name, w] of weights) {
      expect(out.get(name)!.shape).toEqual(w.shape);
      expect(maxAbsDiff(out.get(name)!.data, w.data)).toBe(0);
    }
    model.dispose();
  });

  it('a frozen clone is an independent reference policy', () => {
    const model = Model.init(config, 4);
    const reference = model.clone({ trainable: false });
    expect(reference.trainable).toBe(false);
    const before = reference.scoreTokens(batch).logProbs;
    const trainer = new Trainer(model, { lr: 1e-2 });
    trainer.trainStep(batch, { logProbCoef: new Float32Array(batch.ids.length).fill(-1) });
    expect(maxAbsDiff(reference.scoreTokens(batch).logProbs, before)).toBe(0);
    expect(maxAbsDiff(model.scoreTokens(batch).logProbs, before)).toBeGreaterThan(1e-3);
    trainer.dispose();
    [model, reference].forEach((m) => m.dispose());
  });

  it('frees its variables on dispose and refuses use afterwards', () => {
    const before = tf.memory().numTensors;
    const model = Model.init(config, 5);
    expect(tf.memory().numTensors).toBeGreaterThan(before);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
    expect(errorCode(() => model.exportWeights())).toBe('ENGINE_DISPOSED:');
  });

  it('a value head: added, exported as score.*, reloaded, and trained toward targets', () => {
    const critic = Model.init(config, 6);
    expect(critic.hasValueHead).toBe(false);
    expect(critic.scoreTokens(batch).values).toBeUndefined();
    critic.addValueHead(1);
    expect(errorCode(() => critic.addValueHead(1))).toBe('ENGINE_INVALID_OPTIONS:valueHead');
    const weights = critic.exportWeights();
    expect(weights.get(VALUE_WEIGHT)!.shape).toEqual([1, config.hidden_size]);
    expect(weights.get(VALUE_BIAS)!.shape).toEqual([1]);
    const reloaded = Model.fromWeights(config, weights);
    expect(reloaded.hasValueHead).toBe(true);
    const s = critic.scoreTokens(batch);
    expect(maxAbsDiff(reloaded.scoreTokens(batch).values!, s.values!)).toBeLessThan(1e-6);

    // Squared error to a target of 1.5 on every valid token: dL/dv = 2(v - 1.5)/n.
    const trainer = new Trainer(critic, { lr: 1e-2, weightDecay: 0 });
    const n = s.valid.reduce((a, v) => a + v, 0);
    const mse = () => {
      const v = critic.scoreTokens(batch);
      return v.values!.reduce((acc, x, i) => acc + (v.valid[i] ? (x - 1.5) ** 2 : 0), 0) / n;
    };
    const start = mse();
    for (let i = 0; i < 30; i++) {
      trainer.trainStep(batch, ({ values }) => ({
        logProbCoef: new Float32Array(batch.ids.length),
        valueCoef: values!.map((x, j) => (s.valid[j] ? (2 * (x - 1.5)) / n : 0)),
      }));
    }
    expect(mse()).toBeLessThan(start / 10);
    trainer.dispose();
    [critic, reloaded].forEach((m) => m.dispose());
  });

  it('refuses value coefficients without a value head, and a misshapen score weight', () => {
    const model = Model.init(config, 7);
    const trainer = new Trainer(model, { lr: 1e-3 });
    const zeros = new Float32Array(batch.ids.length);
    expect(errorCode(() => trainer.accumulate(batch, { logProbCoef: zeros, valueCoef: zeros }))).toBe('ENGINE_INVALID_INPUT:valueCoef');
    const weights = initWeights(config, 1);
    weights.set(VALUE_WEIGHT, { shape: [2, config.hidden_size], data: new Float32Array(2 * config.hidden_size) });
    expect(errorCode(() => Model.fromWeights(config, weights))).toBe(`ENGINE_INVALID_WEIGHTS:${VALUE_WEIGHT}`);
    trainer.dispose();
    model.dispose();
  });
});
