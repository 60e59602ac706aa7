import * as tf from '@tensorflow/tfjs-core';
import { modelPreset, type ModelConfig } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import type { CurrentScores } from './logprobs';
import { disposePrefix, prefixForward } from './shared-prefix';
import { Trainer, type TrainerOptions } from './trainer';

const prompt = [3, 14, 15, 9, 26, 5, 31];
const continuations = [[2, 7, 1, 8], [28, 18], [4, 5, 9, 0, 4, 5], [11], [30, 29, 6]];
const ALL_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/**
 * A PPO-like loss on the continuation's tokens only: a coefficient that depends on the current
 * log-prob, the row and the token's place in its continuation, and an entropy term. `offset` is where
 * the continuation starts in the rows the function is given; `rows` maps those rows to continuations.
 */
function lossOn(rows: number[], seqLen: number, offset: number) {
  return ({ logProbs }: CurrentScores) => {
    const logProbCoef = new Float32Array(logProbs.length);
    const entropyCoef = new Float32Array(logProbs.length);
    rows.forEach((c, r) => {
      for (let j = 0; j < continuations[c].length; j++) {
        const i = r * seqLen + offset + j;
        logProbCoef[i] = Math.exp(logProbs[i]) - 0.5 + 0.1 * j - 0.05 * c;
        entropyCoef[i] = j % 2 === 0 ? -0.01 : 0.02;
      }
    });
    return { logProbCoef, entropyCoef };
  };
}

const accumulated = (t: Trainer) => new Map([...(t as unknown as { accumulated: Map<string, tf.Tensor> }).accumulated].map(([k, g]) => [k, Float32Array.from(g.dataSync())]));

/** Every row whole (prompt + continuation) in one pass: the reference. */
function whole(model: Model, options: Partial<TrainerOptions> = {}) {
  const trainer = new Trainer(model, { lr: 0, ...options });
  const batch = padBatch(continuations.map((c) => [...prompt, ...c]));
  batch.scored = Uint8Array.from({ length: batch.ids.length }, (_, i) => (i % batch.seqLen >= prompt.length && batch.mask[i] ? 1 : 0));
  const r = trainer.accumulate(
    batch,
    lossOn(
      continuations.map((_, i) => i),
      batch.seqLen,
      prompt.length,
    ),
  );
  const logProbs = continuations.map((c, row) => r.logProbs.slice(row * batch.seqLen + prompt.length, row * batch.seqLen + prompt.length + c.length));
  const grads = accumulated(trainer);
  trainer.dispose();
  return { loss: r.loss, logProbs, grads };
}

/** The prompt's first tokens shared, each row's last prompt token and continuation in passes of `split` rows. */
function shared(model: Model, split: number[][], options: Partial<TrainerOptions> = {}) {
  const trainer = new Trainer(model, { lr: 0, ...options });
  const group = trainer.sharedPrefix(prompt.slice(0, -1));
  expect(group.length).toBe(prompt.length - 1);
  let loss = 0;
  const logProbs: Float32Array[] = [];
  for (const rows of split) {
    const batch = padBatch(rows.map((c) => [prompt.at(-1)!, ...continuations[c]]));
    batch.scored = Uint8Array.from({ length: batch.ids.length }, (_, i) => (i % batch.seqLen >= 1 && batch.mask[i] ? 1 : 0));
    const r = group.accumulate(batch, lossOn(rows, batch.seqLen, 1));
    loss += r.loss;
    rows.forEach((c, row) => (logProbs[c] = r.logProbs.slice(row * batch.seqLen + 1, row * batch.seqLen + 1 + continuations[c].length)));
  }
  group.finish();
  const grads = accumulated(trainer);
  trainer.dispose();
  return { loss, logProbs, grads };
}

function expectSame(a: ReturnType<typeof whole>, b: ReturnType<typeof whole>): void {
  expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-5);
  a.logProbs.forEach((lp, i) => expect(maxAbsDiff(b.logProbs[i], lp)).toBeLessThan(1e-5));
  expect([...b.grads.keys()].sort()).toEqual([...a.grads.keys()].sort());
  for (const [name, g] of a.grads) {
    const scale = Math.max(1e-6, ...Array.from(g, Math.abs));
    expect(maxAbsDiff(b.grads.get(name)!, g) / scale).toBeLessThan(2e-5);
  }
}

function loraModel(seed: number): Model {
  const model = Model.init(modelPreset('tiny-test'), seed, { trainable: false });
  model.addLora({ r: 2, alpha: 4, targetModules: ALL_LINEARS, seed: seed + 1 });
  // Non-zero B so that A's gradients are not zero either.
  for (const v of model.namedVariables().values()) tf.tidy(() => v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', seed + 2)));
  return model;
}

describe.each(TEST_BACKENDS)('rows that continue a shared prefix on %s', (backend) => {
  useBackend(backend);

  it('give the gradients, loss and log-probs of training every row whole (LoRA on a frozen base)', () => {
    const model = loraModel(5);
    const want = whole(model);
    expectSame(want, shared(model, [[0, 1, 2, 3, 4]]));
    expectSame(want, shared(model, [[0, 1], [2], [3, 4]]));
    model.dispose();
  });

  it('give them when the passes recompute layers, and in full fine-tuning with a tied, trainable embedding', () => {
    const lora = loraModel(9);
    expectSame(
      whole(lora),
      shared(
        lora,
        [
          [4, 2],
          [0, 1, 3],
        ],
        { recompute: true },
      ),
    );
    lora.dispose();
    const config = { ...modelPreset('bench-a'), vocab_size: 32, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3 } as ModelConfig;
    const full = Model.init(config, 3);
    const want = whole(full);
    expect([...want.grads.keys()].some((k) => k.includes('embed_tokens'))).toBe(true);
    expectSame(
      want,
      shared(full, [
        [0, 1, 2],
        [3, 4],
      ]),
    );
    full.dispose();
  });

  it('keep the products of the layers that fit the budget, bottom first (the rest are recomputed)', () => {
    const model = loraModel(7);
    const ids = Int32Array.from(prompt);
    const layerBytes = (() => {
      const one = prefixForward(model, ids);
      const bytes = one.products.map((p) => p?.bytes ?? 0);
      disposePrefix(one);
      return bytes;
    })();
    expect(layerBytes.every((b) => b > 0)).toBe(model.placement === 'native');
    if (model.placement === 'native') {
      const part = prefixForward(model, ids, layerBytes[0] + layerBytes[1] / 2);
      expect(part.products.map((p) => p !== undefined)).toEqual(layerBytes.map((_, i) => i === 0));
      disposePrefix(part);
    }
    model.dispose();
  });

  it('leave no tensor behind, finished or dropped, and refuse a pass after the end', () => {
    const model = loraModel(13);
    shared(model, [[0, 1, 2, 3, 4]]);
    const before = tf.memory().numTensors;
    shared(model, [
      [0, 1],
      [2, 3, 4],
    ]);
    const trainer = new Trainer(model, { lr: 1e-3 });
    const group = trainer.sharedPrefix(prompt.slice(0, -1));
    group.accumulate(padBatch([[prompt.at(-1)!, ...continuations[0]]]), lossOn([0], 5, 1));
    group.dispose();
    expect(() => group.accumulate(padBatch([[1, 2]]), { logProbCoef: [0, 0] })).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_OPTIONS', field: 'prefix' }));
    expect(() => group.finish()).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_OPTIONS' }));
    trainer.dispose();
    expect(tf.memory().numTensors).toBe(before);
    expect(() => new Trainer(model, { lr: 0 }).sharedPrefix([])).toThrow(expect.objectContaining({ code: 'ENGINE_INVALID_INPUT', field: 'prefix' }));
    model.dispose();
  });
});
