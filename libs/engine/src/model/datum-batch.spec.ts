import * as tf from '@tensorflow/tfjs-core';
import { errorCode } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { Trainer } from '../train/trainer';
import { datumBatch } from './datum-batch';
import { modelPreset } from './model-config';
import { padBatch } from './token-batch';
import { Model } from './transformer';
import { initWeights } from './weights';

const config = { ...modelPreset('tiny-test'), vocab_size: 260 };
const weights = initWeights(config, 21);

describe.each(TEST_BACKENDS)('datums laid out for the engine (%s)', (backend) => {
  useBackend(backend);

  it('scores each target from its input prefix, also where targets are not the shifted input', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 4, targetModules: ['q_proj', 'lm_head'], seed: 1 }, 'a');
    const datums = [
      { input: [5, 6, 7, 8], targets: [0, 0, 8, 9] },
      { input: [20, 21], targets: [22, 23] },
    ];
    const db = datumBatch(datums);
    const lp = db.perDatum(model.scoreTokens(db.batch, { adapter: 'a' }).logProbs);
    datums.forEach((d, r) => {
      const logits = model.withAdapter('a', () => tf.tidy(() => tf.logSoftmax(model.logits(padBatch([d.input]))).arraySync() as number[][]));
      const want = d.targets.map((t, i) => logits[i][t]);
      expect(maxAbsDiff(lp[r], want)).toBeLessThan(2e-5);
    });
    // Targets that are the shifted input score as the plain sequence does.
    const plain = padBatch([[5, 6, 7, 8, 9]]);
    const shifted = datumBatch([{ input: [5, 6, 7, 8], targets: [6, 7, 8, 9] }]);
    expect(maxAbsDiff(shifted.perDatum(model.scoreTokens(shifted.batch).logProbs)[0], model.scoreTokens(plain).logProbs.subarray(1))).toBeLessThan(1e-6);
    model.dispose();
  });

  it('trains the targets it is given: per-datum coefficients mapped back raise the weighted targets log-probs', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 4, seed: 2 }, 'a');
    const datums = [
      { input: [1, 2, 3], targets: [9, 9, 9] },
      { input: [4, 5], targets: [6, 7] },
    ];
    const db = datumBatch(datums);
    const w = [
      [0, 1, 1],
      [1, 0.5],
    ];
    const trainer = new Trainer(model, { lr: 0.05, weightDecay: 0, adapter: 'a' });
    const before = db.perDatum(model.scoreTokens(db.batch, { adapter: 'a' }).logProbs);
    let seen: Float32Array[] = [];
    for (let i = 0; i < 5; i++) {
      trainer.accumulate(db.batch, ({ logProbs }) => {
        seen = db.perDatum(logProbs);
        return { logProbCoef: db.tokenAligned(w.map((ws) => ws.map((x) => -x))) };
      });
      trainer.step();
    }
    expect(maxAbsDiff(seen[0], db.perDatum(model.scoreTokens(db.batch, { adapter: 'a' }).logProbs)[0])).toBeGreaterThan(0);
    const after = db.perDatum(model.scoreTokens(db.batch, { adapter: 'a' }).logProbs);
    expect(after[0][1]).toBeGreaterThan(before[0][1]);
    expect(after[1][0]).toBeGreaterThan(before[1][0]);
    trainer.dispose();
    model.dispose();
  });

  it('refuses datums that do not line up', () => {
    expect(errorCode(() => datumBatch([]))).toBe('ENGINE_INVALID_INPUT:data');
    expect(errorCode(() => datumBatch([{ input: [1, 2], targets: [2] }]))).toBe('ENGINE_INVALID_INPUT:target_tokens');
    expect(errorCode(() => datumBatch([{ input: [], targets: [] }]))).toBe('ENGINE_INVALID_INPUT:model_input');
    expect(errorCode(() => datumBatch([{ input: [1], targets: [-1] }]))).toBe('ENGINE_INVALID_INPUT:target_tokens');
    const model = Model.fromWeights(config, weights, { trainable: false });
    expect(errorCode(() => model.scoreTokens(datumBatch([{ input: [1], targets: [999] }]).batch))).toBe('ENGINE_INVALID_INPUT:targets');
    model.dispose();
  });
});
