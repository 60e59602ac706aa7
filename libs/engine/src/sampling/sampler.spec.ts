import { jest } from '@jest/globals';
import * as tf from '@tensorflow/tfjs-core';
import { isEngineError } from '../errors';
import { modelPreset } from '../model/model-config';
import { padBatch } from '../model/token-batch';
import { Model } from '../model/transformer';
import { TEST_BACKENDS, useBackend } from '../testing/backends';
import { sample } from './sampler';

const prompts = [[1, 2, 3, 4, 5], [7], [9, 3, 11]];

describe.each(TEST_BACKENDS)('sample with a KV cache on %s', (backend) => {
  useBackend(backend);
  let model: Model;
  beforeAll(() => {
    model = Model.init(modelPreset('tiny-test'), 11);
  });
  afterAll(() => model.dispose());

  it('log-probs of sampled tokens match what the trainer recomputes to 1e-4 (token in, token out)', () => {
    const outs = sample(model, prompts, { maxNewTokens: 12, temperature: 1, seed: 5, stopTokenIds: [] });
    const full = prompts.map((p, i) => [...p, ...outs[i].tokens]);
    const batch = padBatch(full); // right-padded, as a training batch
    const scores = model.scoreTokens(batch);
    let worst = 0;
    outs.forEach((o, i) => {
      expect(o.tokens).toHaveLength(12);
      o.logProbs.forEach((lp, j) => {
        const t = prompts[i].length + j;
        worst = Math.max(worst, Math.abs(scores.logProbs[i * batch.seqLen + t] - lp));
      });
    });
    expect(worst).toBeLessThan(1e-4);
  });

  it('prefills a repeated prompt once (a GRPO group rolled out as rows) and samples each row as if alone', () => {
    const repeated = [prompts[0], prompts[2], prompts[0], prompts[1], prompts[2]];
    const run = jest.spyOn(model, 'run');
    const outs = sample(model, repeated, { maxNewTokens: 10, temperature: 1, seed: 3, stopTokenIds: [], promptLogProbs: true });
    expect((run.mock.calls[0][0] as tf.Tensor).shape[0]).toBe(3);
    run.mockRestore();
    const batch = padBatch(repeated.map((p, i) => [...p, ...outs[i].tokens]));
    const scores = model.scoreTokens(batch);
    let worst = 0;
    outs.forEach((o, i) => o.logProbs.forEach((lp, j) => (worst = Math.max(worst, Math.abs(scores.logProbs[i * batch.seqLen + repeated[i].length + j] - lp)))));
    expect(worst).toBeLessThan(1e-4);
    expect(outs[2].promptLogProbs).toEqual(outs[0].promptLogProbs);
    expect(outs[2].tokens).not.toEqual(outs[0].tokens);
  });

  it('is reproducible from the seed and varies with it', () => {
    const a = sample(model, prompts, { maxNewTokens: 8, seed: 1, stopTokenIds: [] });
    const b = sample(model, prompts, { maxNewTokens: 8, seed: 1, stopTokenIds: [] });
    const c = sample(model, prompts, { maxNewTokens: 8, seed: 2, stopTokenIds: [] });
    expect(a.map((o) => o.tokens)).toEqual(b.map((o) => o.tokens));
    expect(a.map((o) => o.tokens)).not.toEqual(c.map((o) => o.tokens));
  });

  it('greedy decoding with the cache equals argmax of full forward passes', () => {
    const [out] = sample(model, [prompts[0]], { maxNewTokens: 6, temperature: 0, stopTokenIds: [] });
    const seq = [...prompts[0]];
    for (let i = 0; i < 6; i++) {
      const next = tf.tidy(() => {
        const logits = model.logits(padBatch([seq]));
        return tf.argMax(logits, -1).dataSync()[seq.length - 1];
      });
      seq.push(next);
    }
    expect(out.tokens).toEqual(seq.slice(prompts[0].length));
    expect(out.samplingLogProbs.every((x) => x === 0)).toBe(true);
  });

  it('a row stops at a stop token (kept) while others run on', () => {
    const free = sample(model, prompts, { maxNewTokens: 6, temperature: 0, stopTokenIds: [] });
    const stopId = free[0].tokens[2];
    const firstAt = free[0].tokens.indexOf(stopId);
    const stopped = sample(model, prompts, { maxNewTokens: 6, temperature: 0, stopTokenIds: [stopId] });
    expect(stopped[0].tokens).toEqual(free[0].tokens.slice(0, firstAt + 1));
    expect(stopped[0].finishReason).toBe('stop');
    stopped.forEach((o, i) => {
      if (!free[i].tokens.includes(stopId)) expect(o).toEqual({ ...free[i], finishReason: 'length' });
    });
  });

  it('the stop hook ends a row (stop strings)', () => {
    const seen: number[] = [];
    const outs = sample(model, prompts, {
      maxNewTokens: 10,
      stopTokenIds: [],
      stopCheck: (row, generated) => {
        seen.push(row);
        return row === 1 && generated.length === 3;
      },
    });
    expect(outs[1].tokens).toHaveLength(3);
    expect(outs[1].finishReason).toBe('stop');
    expect(outs[0].tokens).toHaveLength(10);
    expect(outs[0].finishReason).toBe('length');
    expect(new Set(seen)).toEqual(new Set([0, 1, 2]));
  });

  it('uses the config eos ids by default', () => {
    const config = { ...modelPreset('tiny-test'), eos_token_id: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] };
    const m = Model.fromWeights(config, model.exportWeights());
    try {
      const outs = sample(m, prompts, { maxNewTokens: 40, seed: 3 });
      for (const o of outs) {
        if (o.finishReason === 'stop') expect(o.tokens[o.tokens.length - 1]).toBeLessThan(16);
        expect(o.tokens.slice(0, -1).every((t) => t >= 16)).toBe(true);
      }
      expect(outs.some((o) => o.finishReason === 'stop')).toBe(true);
    } finally {
      m.dispose();
    }
  });

  it('refuses bad options and prompts with codes', () => {
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return isEngineError(e) ? `${e.code}:${e.field}` : 'other';
      }
      return 'none';
    };
    expect(code(() => sample(model, prompts, { maxNewTokens: 0 }))).toBe('ENGINE_INVALID_OPTIONS:maxNewTokens');
    expect(code(() => sample(model, prompts, { maxNewTokens: 2, topP: 0 }))).toBe('ENGINE_INVALID_OPTIONS:topP');
    expect(code(() => sample(model, prompts, { maxNewTokens: 2, temperature: -1 }))).toBe('ENGINE_INVALID_OPTIONS:temperature');
    expect(code(() => sample(model, [[]], { maxNewTokens: 2 }))).toBe('ENGINE_INVALID_INPUT:prompts');
    expect(code(() => sample(model, [[99]], { maxNewTokens: 2 }))).toBe('ENGINE_INVALID_INPUT:prompts');
    expect(code(() => sample(model, [[1]], { maxNewTokens: 64 }))).toBe('ENGINE_INVALID_INPUT:maxNewTokens');
  });

  it('leaks no tensors across 100 sampling calls', () => {
    sample(model, prompts, { maxNewTokens: 3, seed: 0 });
    const before = tf.memory().numTensors;
    for (let i = 0; i < 100; i++) sample(model, prompts, { maxNewTokens: 3, seed: i, stopTokenIds: [] });
    expect(tf.memory().numTensors).toBe(before);
  });
});
