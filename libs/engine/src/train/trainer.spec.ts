import * as tf from '@tensorflow/tfjs-core';
import { isEngineError } from '../errors';
import { modelPreset, type ModelConfig } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { crossEntropyCoefficients } from './logprobs';
import { warmupCosineSchedule } from './lr-schedule';
import { Trainer } from './trainer';

const sequences = [
  [1, 4, 9, 16, 25, 6, 17, 30],
  [2, 3, 5, 7, 11, 13],
  [31, 30, 29, 28, 27, 26, 25],
  [8, 8, 1, 8, 8, 1, 8, 8],
];

function flatWeights(model: Model): Float32Array {
  const parts = [...model.exportWeights().values()].map((w) => w.data);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

describe.each(TEST_BACKENDS)('Trainer on %s', (backend) => {
  useBackend(backend);
  const config: ModelConfig = modelPreset('tiny-test');

  it('SFT coefficients give the mean NLL of the masked tokens as the loss', () => {
    const model = Model.init(config, 1);
    const trainer = new Trainer(model, { lr: 0 });
    const batch = padBatch(sequences);
    const mask = new Float32Array(batch.ids.length).fill(1);
    mask[3] = 0; // leave one token out
    const scores = model.scoreTokens(batch);
    let sum = 0;
    let count = 0;
    scores.valid.forEach((v, i) => {
      if (v && mask[i]) {
        sum -= scores.logProbs[i];
        count++;
      }
    });
    const r = trainer.trainStep(batch, crossEntropyCoefficients(batch, mask));
    expect(r.loss).toBeCloseTo(sum / count, 4);
    expect(r.tokens).toBe(sequences.reduce((n, s) => n + s.length - 1, 0));
    expect(maxAbsDiff(r.logProbs, scores.logProbs)).toBeLessThan(1e-5);
    trainer.dispose();
    model.dispose();
  });

  it('accumulating two halves equals one step on the whole batch', () => {
    const a = Model.init(config, 2);
    const b = a.clone();
    const whole = padBatch(sequences);
    const ta = new Trainer(a, { lr: 1e-2, maxGradNorm: 0.5 });
    const tb = new Trainer(b, { lr: 1e-2, maxGradNorm: 0.5 });
    const ce = crossEntropyCoefficients(whole);
    const ra = ta.trainStep(whole, ce);
    // Same per-token coefficients, split into two micro-batches of two rows.
    const rowsOf = (rows: number[]) => {
      const part = padBatch(
        rows.map((r) => sequences[r]),
        { length: whole.seqLen },
      );
      const coef = new Float32Array(part.ids.length);
      rows.forEach((r, i) => coef.set(ce.logProbCoef.slice(r * whole.seqLen, (r + 1) * whole.seqLen) as Float32Array, i * whole.seqLen));
      return { part, coef };
    };
    for (const rows of [
      [0, 1],
      [2, 3],
    ]) {
      const { part, coef } = rowsOf(rows);
      tb.accumulate(part, { logProbCoef: coef });
    }
    expect(tb.pending).toBe(2);
    const rb = tb.step();
    expect(rb.microBatches).toBe(2);
    expect(rb.gradNorm).toBeCloseTo(ra.gradNorm, 4);
    expect(maxAbsDiff(flatWeights(a), flatWeights(b))).toBeLessThan(1e-5);
    [ta, tb].forEach((t) => t.dispose());
    [a, b].forEach((m) => m.dispose());
  });

  it('scores only the tokens of batch.scored: the same update, zeros elsewhere, and no coefficient there', () => {
    const a = Model.init(config, 10);
    const b = a.clone();
    const batch = padBatch(sequences);
    // The last three tokens of each row play the response (RL scores those only).
    const scored = new Uint8Array(batch.ids.length);
    sequences.forEach((s, r) => scored.fill(1, r * batch.seqLen + s.length - 3, r * batch.seqLen + s.length));
    const ce = crossEntropyCoefficients(batch, scored);
    const ta = new Trainer(a, { lr: 1e-2 });
    const tb = new Trainer(b, { lr: 1e-2 });
    const all = ta.trainStep(batch, ce);
    const some = tb.trainStep({ ...batch, scored }, ce);
    expect(some.loss).toBeCloseTo(all.loss, 5);
    expect(some.gradNorm).toBeCloseTo(all.gradNorm, 5);
    expect(maxAbsDiff(flatWeights(a), flatWeights(b))).toBeLessThan(1e-6);
    scored.forEach((s, i) => {
      if (s) expect(Math.abs(some.logProbs[i] - all.logProbs[i])).toBeLessThan(1e-5);
      else expect([Math.abs(some.logProbs[i]), Math.abs(some.entropy[i])]).toEqual([0, 0]);
    });
    expect(all.logProbs.some((lp, i) => !scored[i] && lp !== 0)).toBe(true);
    const bad = Float32Array.from(ce.logProbCoef);
    bad[1] = -1; // row 0's second token: it has a log-prob, but it is not scored
    expect(() => tb.accumulate({ ...batch, scored }, { logProbCoef: bad })).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT', field: 'logProbCoef' }));
    [ta, tb].forEach((t) => t.dispose());
    [a, b].forEach((m) => m.dispose());
  });

  it('reports the pre-clip norm and clips to the limit', () => {
    const model = Model.init(config, 3);
    const trainer = new Trainer(model, { lr: 1e-3, maxGradNorm: 1e-3 });
    const batch = padBatch(sequences);
    const r = trainer.trainStep(batch, crossEntropyCoefficients(batch));
    expect(r.gradNorm).toBeGreaterThan(1e-3);
    expect(r.clipped).toBe(true);
    const loose = new Trainer(model, { lr: 1e-3, maxGradNorm: 1e6 });
    expect(loose.trainStep(batch, crossEntropyCoefficients(batch)).clipped).toBe(false);
    [trainer, loose].forEach((t) => t.dispose());
    model.dispose();
  });

  it('passes the current log-probs to coefficient functions (one forward pass for PPO-style losses)', () => {
    const model = Model.init(config, 4);
    const trainer = new Trainer(model, { lr: 1e-3 });
    const batch = padBatch(sequences);
    const expected = model.scoreTokens(batch);
    let seen: Float32Array | undefined;
    trainer.trainStep(batch, ({ logProbs }) => {
      seen = logProbs;
      return { logProbCoef: logProbs.map((_, i) => (expected.valid[i] ? -1 : 0)) };
    });
    expect(maxAbsDiff(seen!, expected.logProbs)).toBeLessThan(1e-5);
    trainer.dispose();
    model.dispose();
  });

  it('follows the learning-rate schedule', () => {
    const model = Model.init(config, 5);
    const schedule = warmupCosineSchedule({ peak: 1e-3, warmupSteps: 2, totalSteps: 6 });
    const trainer = new Trainer(model, { lr: schedule });
    const batch = padBatch(sequences.slice(0, 1));
    const lrs = [0, 1, 2, 3].map(() => trainer.trainStep(batch, crossEntropyCoefficients(batch)).lr);
    expect(lrs).toEqual([0, 1, 2, 3].map(schedule));
    expect(trainer.steps).toBe(4);
    trainer.dispose();
    model.dispose();
  });

  it('skips a step whose gradient norm is not finite, leaving the weights', () => {
    const model = Model.init(config, 6);
    const trainer = new Trainer(model, { lr: 1e-2 });
    const batch = padBatch(sequences);
    const before = flatWeights(model);
    const huge = new Float32Array(batch.ids.length).fill(3e38);
    const r = trainer.trainStep(batch, { logProbCoef: huge });
    expect(r.skipped).toBe(true);
    expect(trainer.steps).toBe(0);
    expect(maxAbsDiff(flatWeights(model), before)).toBe(0);
    trainer.dispose();
    model.dispose();
  });

  it('refuses frozen models, bad options and bad coefficients with codes', () => {
    const frozen = Model.init(config, 7, { trainable: false });
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return isEngineError(e) ? `${e.code}:${e.field}` : String(e);
      }
      return 'none';
    };
    expect(code(() => new Trainer(frozen, { lr: 1 }))).toBe('ENGINE_INVALID_OPTIONS:model');
    const model = Model.init(config, 7);
    expect(code(() => new Trainer(model, { lr: -1 }))).toBe('ENGINE_INVALID_OPTIONS:lr');
    expect(code(() => new Trainer(model, { lr: 1, maxGradNorm: 0 }))).toBe('ENGINE_INVALID_OPTIONS:maxGradNorm');
    const trainer = new Trainer(model, { lr: 1e-3 });
    const batch = padBatch(sequences);
    expect(code(() => trainer.step())).toBe('ENGINE_INVALID_OPTIONS:step');
    expect(code(() => trainer.accumulate(batch, { logProbCoef: [1, 2] }))).toBe('ENGINE_INVALID_INPUT:logProbCoef');
    const nan = new Float32Array(batch.ids.length).fill(NaN);
    expect(code(() => trainer.accumulate(batch, { logProbCoef: nan }))).toBe('ENGINE_INVALID_INPUT:logProbCoef');
    const outside = padBatch([[1, 99]]);
    expect(code(() => trainer.accumulate(outside, { logProbCoef: [0, 0] }))).toBe('ENGINE_INVALID_INPUT:ids');
    trainer.dispose();
    [frozen, model].forEach((m) => m.dispose());
  });

  it('leaks no tensors across 100 training steps', () => {
    // One layer keeps 100 steps quick on the pure-JS backend; leaks do not depend on depth.
    const model = Model.init({ ...config, num_hidden_layers: 1 }, 8);
    const trainer = new Trainer(model, { lr: 1e-3, maxGradNorm: 1 });
    const batch = padBatch(sequences.slice(0, 1));
    const ce = crossEntropyCoefficients(batch);
    trainer.trainStep(batch, ce); // optimizer state exists from here on
    const before = tf.memory().numTensors;
    for (let i = 0; i < 100; i++) trainer.trainStep(batch, ce);
    expect(tf.memory().numTensors).toBe(before);
    trainer.dispose();
    model.dispose();
  });

  it('learns: overfits a handful of sequences (loss falls by a large factor in 50 steps)', () => {
    const model = Model.init({ ...config, initializer_range: 0.02 }, 9);
    const trainer = new Trainer(model, { lr: 1e-2, maxGradNorm: 1, weightDecay: 0 });
    const batch = padBatch(sequences);
    const ce = crossEntropyCoefficients(batch);
    const losses: number[] = [];
    for (let i = 0; i < 50; i++) losses.push(trainer.trainStep(batch, ce).loss);
    expect(losses[0]).toBeGreaterThan(3); // about ln(32) at the start
    expect(losses[49]).toBeLessThan(losses[0] / 10);
    trainer.dispose();
    model.dispose();
  });
});
