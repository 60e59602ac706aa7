import * as tf from '@tensorflow/tfjs-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isEngineError } from '../errors';
import { readOptimizerState, writeOptimizerState } from '../io/optimizer-state';
import { loadLoraAdapter, saveLoraAdapter, type LoraAdapter } from '../io/peft-adapter';
import { promptLogprobs } from '../sampling/prompt-logprobs';
import { sample } from '../sampling/sampler';
import { errorCode, randomisedAdapter } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { stopStringHook } from '../tokenizer/stop-strings';
import { crossEntropyCoefficients } from '../train/logprobs';
import { Trainer } from '../train/trainer';
import { loraStateBytes } from './lora';
import { modelPreset } from './model-config';
import { padBatch, type TokenBatch } from './token-batch';
import { DEFAULT_ADAPTER, Model } from './transformer';
import { initWeights } from './weights';

// Many adapters over one base: each trains as it would on a model of its own, snapshots stay put, a
// pass can mix adapters per row, and sampling returns prompt log-probs and several samples per prompt.

const config = { ...modelPreset('tiny-test'), vocab_size: 260 };
const weights = initWeights(config, 11);
const ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const batchA = padBatch([
  [1, 2, 3, 4, 5, 6, 7, 8],
  [9, 10, 11, 12],
]);
const batchB = padBatch([
  [40, 41, 42, 43, 44, 45],
  [50, 51, 52],
  [60, 61, 62, 63, 64],
]);

function flat(adapter: LoraAdapter): Float32Array {
  const parts = [...adapter.weights.keys()].sort().flatMap((m) => [adapter.weights.get(m)!.A.data, adapter.weights.get(m)!.B.data]);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function scoresOfRows(model: Model, batch: TokenBatch, adapter: Parameters<Model['withAdapter']>[0]): Float32Array {
  return model.scoreTokens(batch, { adapter: adapter as never }).logProbs;
}

describe.each(TEST_BACKENDS)('many LoRA adapters on one base (%s)', (backend) => {
  useBackend(backend);
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'multi-lora-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('two adapters trained on one base give what two separate models give, and leave the base bit-identical', () => {
    const shared = Model.fromWeights(config, weights, { trainable: false });
    shared.addLora({ r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'], seed: 1 }, 'a');
    shared.addLora({ r: 2, alpha: 32, targetModules: [...ALL, 'lm_head'], seed: 2 }, 'b');
    const ta = new Trainer(shared, { lr: 1e-2, weightDecay: 0, adapter: 'a' });
    const tb = new Trainer(shared, { lr: 3e-3, weightDecay: 0.1, adapter: 'b', maxGradNorm: 0.5 });
    const alone = [Model.fromWeights(config, weights, { trainable: false }), Model.fromWeights(config, weights, { trainable: false })];
    alone[0].addLora({ r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'], seed: 1 });
    alone[1].addLora({ r: 2, alpha: 32, targetModules: [...ALL, 'lm_head'], seed: 2 });
    const sa = new Trainer(alone[0], { lr: 1e-2, weightDecay: 0 });
    const sb = new Trainer(alone[1], { lr: 3e-3, weightDecay: 0.1, maxGradNorm: 0.5 });
    const ceA = crossEntropyCoefficients(batchA);
    const ceB = crossEntropyCoefficients(batchB);
    const start = tf.memory().numTensors;
    const lossesA: number[] = [];
    for (let i = 0; i < 6; i++) {
      // Interleaved, as requests of two clients arrive.
      lossesA.push(ta.trainStep(batchA, ceA).loss);
      tb.accumulate(batchB, ceB);
      tb.step({ lr: 3e-3 * (1 - i / 10) });
      expect(sa.trainStep(batchA, ceA).loss).toBeCloseTo(lossesA[i], 5);
      sb.accumulate(batchB, ceB);
      sb.step({ lr: 3e-3 * (1 - i / 10) });
    }
    expect(tf.memory().numTensors).toBe(start);
    expect(lossesA[5]).toBeLessThan(lossesA[0]);
    expect(maxAbsDiff(flat(shared.exportLora(undefined, 'a')), flat(alone[0].exportLora()))).toBeLessThan(1e-6);
    expect(maxAbsDiff(flat(shared.exportLora(undefined, 'b')), flat(alone[1].exportLora()))).toBeLessThan(1e-6);
    expect(maxAbsDiff(scoresOfRows(shared, batchB, 'b'), alone[1].scoreTokens(batchB).logProbs)).toBeLessThan(1e-5);
    const base = shared.exportWeights();
    for (const [name, w] of weights) expect(maxAbsDiff(base.get(name)!.data, w.data)).toBe(0);
    // No default adapter: a pass without a selection is the base.
    expect(shared.hasLora).toBe(false);
    expect(shared.adapterNames()).toEqual(['a', 'b']);
    for (const t of [ta, tb, sa, sb]) t.dispose();
    for (const m of [shared, ...alone]) m.dispose();
  });

  it('snapshots keep the weights of the moment they were taken; several live at once; disposed ones refuse', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    const baseHeap = model.weightBytes().heap;
    model.addLora({ r: 4, alpha: 8, targetModules: [...ALL, 'lm_head'], seed: 3 }, 'policy');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'policy'), 4, 0.2), 'other');
    const trainer = new Trainer(model, { lr: 2e-2, weightDecay: 0, adapter: 'policy' });
    const ce = crossEntropyCoefficients(batchA);
    trainer.trainStep(batchA, ce);
    const s1 = model.snapshotAdapter('policy');
    const at1 = scoresOfRows(model, batchA, 'policy');
    const exported1 = flat(model.exportLora(undefined, s1));
    trainer.trainStep(batchA, ce);
    const s2 = model.snapshotAdapter('policy');
    const at2 = scoresOfRows(model, batchA, 'policy');
    for (let i = 0; i < 3; i++) trainer.trainStep(batchA, ce);
    expect(maxAbsDiff(scoresOfRows(model, batchA, s1), at1)).toBe(0);
    expect(maxAbsDiff(scoresOfRows(model, batchA, s2), at2)).toBe(0);
    expect(maxAbsDiff(flat(model.exportLora(undefined, s1)), exported1)).toBe(0);
    expect(maxAbsDiff(scoresOfRows(model, batchA, 'policy'), at2)).toBeGreaterThan(1e-4);
    expect(model.weightBytes().heap).toBe(baseHeap + model.adapterInfo('policy').bytes + model.adapterInfo('other').bytes + s1.bytes + s2.bytes);
    expect(s1.bytes).toBe(model.adapterInfo('policy').bytes);
    // Sampling from a snapshot equals sampling from the adapter at that step.
    const greedy = { maxNewTokens: 5, temperature: 0, stopTokenIds: [] as number[] };
    const fromSnapshot = sample(model, [[1, 2, 3]], { ...greedy, adapter: s2 });
    s1.dispose();
    expect(s1.isDisposed).toBe(true);
    expect(errorCode(() => model.scoreTokens(batchA, { adapter: s1 }))).toBe('ENGINE_DISPOSED:adapter');
    const other = Model.fromWeights(config, weights, { trainable: false });
    expect(errorCode(() => other.scoreTokens(batchA, { adapter: s2 }))).toBe('ENGINE_INVALID_OPTIONS:adapter');
    other.dispose();
    // Removing the adapter leaves its snapshot usable; disposing the model frees what is left.
    trainer.dispose();
    model.removeLora('policy');
    expect(maxAbsDiff(sample(model, [[1, 2, 3]], { ...greedy, adapter: s2 })[0].logProbs, fromSnapshot[0].logProbs)).toBe(0);
    const before = tf.memory().numTensors;
    const factors = s2.bytes;
    expect(factors).toBeGreaterThan(0);
    model.dispose();
    expect(s2.isDisposed).toBe(true);
    expect(tf.memory().numTensors).toBeLessThan(before);
  });

  it('a pass with a different adapter per row gives each row what a pass of its own gives', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 4, targetModules: ['q_proj', 'up_proj'], seed: 5 }, 'x');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'x'), 6, 0.2), 'x2');
    model.addLora({ r: 3, alpha: 6, targetModules: ['k_proj', 'down_proj', 'lm_head'], seed: 7 }, 'y');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'y'), 8, 0.2), 'y2');
    const snap = model.snapshotAdapter('y2');
    const rows = padBatch([
      [1, 2, 3, 4, 5],
      [6, 7, 8],
      [9, 10, 11, 12, 13, 14],
      [15, 16],
    ]);
    const refs = ['x2', null, snap, 'y2'] as const;
    const mixed = scoresOfRows(model, rows, refs);
    const t = rows.seqLen;
    refs.forEach((ref, r) => {
      const alone = scoresOfRows(model, rows, ref);
      expect(maxAbsDiff(mixed.subarray(r * t, (r + 1) * t), alone.subarray(r * t, (r + 1) * t))).toBeLessThan(2e-5);
    });
    // Sampling: per-prompt adapters in one batch, greedy, the same tokens and log-probs as alone.
    const prompts = [
      [1, 2, 3],
      [4, 5],
      [6, 7, 8, 9],
    ];
    const per = ['x2', 'y2', null] as const;
    const together = sample(model, prompts, { maxNewTokens: 6, temperature: 0, stopTokenIds: [], adapter: per });
    prompts.forEach((p, i) => {
      const [alone] = sample(model, [p], { maxNewTokens: 6, temperature: 0, stopTokenIds: [], adapter: per[i] });
      expect(together[i].tokens).toEqual(alone.tokens);
      expect(maxAbsDiff(together[i].logProbs, alone.logProbs)).toBeLessThan(2e-5);
    });
    expect(errorCode(() => model.scoreTokens(rows, { adapter: ['x', 'y'] }))).toBe('ENGINE_INVALID_INPUT:adapter');
    expect(errorCode(() => model.scoreTokens(rows, { adapter: 'nope' }))).toBe('ENGINE_INVALID_OPTIONS:adapter');
    model.dispose();
  });

  it('samples several continuations per prompt from one prefill, with prompt log-probs equal to scoring', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 4, targetModules: [...ALL, 'lm_head'], seed: 9 }, 'p');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'p'), 10, 0.2), 'q');
    const prompts = [
      [3, 1, 4, 1, 5],
      [9, 2],
    ];
    const opts = { maxNewTokens: 6, temperature: 1, seed: 5, stopTokenIds: [] as number[], adapter: 'q' };
    const many = sample(model, prompts, { ...opts, numSamples: 3, promptLogProbs: true });
    const repeated = sample(model, [prompts[0], prompts[0], prompts[0], prompts[1], prompts[1], prompts[1]], opts);
    expect(many.length).toBe(6);
    many.forEach((s, r) => {
      expect(s.tokens).toEqual(repeated[r].tokens);
      expect(maxAbsDiff(s.logProbs, repeated[r].logProbs)).toBeLessThan(2e-5);
    });
    expect(new Set(many.slice(0, 3).map((s) => s.tokens.join(','))).size).toBeGreaterThan(1);
    // The prompt alone, scored through the output head's logits (the OpenAI echo path) and through scoreTokens.
    const scored = prompts.map((p) => Float32Array.from(model.withAdapter('q', () => promptLogprobs(model, p, 0)).logProbs, (x) => x ?? NaN));
    const direct = model.scoreTokens(padBatch([prompts[0]]), { adapter: 'q' }).logProbs;
    expect(maxAbsDiff(scored[0].subarray(1), direct.subarray(1))).toBeLessThan(2e-5);
    many.forEach((s, r) => {
      const want = scored[Math.floor(r / 3)];
      expect(s.promptLogProbs!.length).toBe(want.length);
      expect(Number.isNaN(s.promptLogProbs![0])).toBe(true);
      expect(maxAbsDiff(s.promptLogProbs!.subarray(1), want.subarray(1))).toBeLessThan(2e-5);
    });
    // Sampled log-probs are the temperature-1 log-probs the trainer recomputes.
    const full = [...prompts[1], ...many[4].tokens];
    const rescored = model.scoreTokens(padBatch([full]), { adapter: 'q' }).logProbs.subarray(prompts[1].length);
    expect(maxAbsDiff(rescored, many[4].logProbs)).toBeLessThan(1e-4);
    model.dispose();
  });

  it('stops at a stop string across tokens, keeping the token that completes it', () => {
    // One letter per id, so where the stop string lies in the text says which token completes it.
    const tokenizer = { decode: (ids: readonly number[]) => ids.map((id) => String.fromCharCode(97 + (id % 26))).join('') };
    const model = Model.fromWeights(config, weights, { trainable: false });
    const free = sample(model, [[72, 105]], { maxNewTokens: 12, temperature: 0, stopTokenIds: [] })[0];
    const text = tokenizer.decode(free.tokens);
    const stop = text.slice(3, 5);
    const out = sample(model, [[72, 105]], { maxNewTokens: 12, temperature: 0, stopTokenIds: [], stopCheck: stopStringHook(tokenizer, [stop]) })[0];
    expect(out.finishReason).toBe('stop');
    expect(out.tokens).toEqual(free.tokens.slice(0, text.indexOf(stop) + stop.length));
    model.dispose();
  });

  it('per-step AdamW settings apply to that step only and are checked before anything changes', () => {
    const ce = crossEntropyCoefficients(batchA);
    const run = (perStep: boolean) => {
      const model = Model.fromWeights(config, weights, { trainable: false });
      model.addLora({ r: 2, alpha: 4, targetModules: ALL, seed: 12 }, 'c');
      const fixed = { betas: [0.8, 0.95] as [number, number], eps: 1e-12, weightDecay: 0.05, maxGradNorm: 0.1 };
      const trainer = perStep ? new Trainer(model, { lr: 1, adapter: 'c' }) : new Trainer(model, { lr: 5e-3, adapter: 'c', ...fixed });
      for (let i = 0; i < 3; i++) {
        trainer.accumulate(batchA, ce);
        const r = perStep ? trainer.step({ lr: 5e-3, ...fixed }) : trainer.step();
        expect(r.clipped).toBe(true);
        expect(r.lr).toBe(5e-3);
      }
      const out = flat(model.exportLora(undefined, 'c'));
      trainer.dispose();
      model.dispose();
      return out;
    };
    expect(maxAbsDiff(run(true), run(false))).toBe(0);
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 4, seed: 13 }, 'c');
    const trainer = new Trainer(model, { lr: 1e-3, adapter: 'c' });
    trainer.accumulate(batchA, ce);
    const before = flat(model.exportLora(undefined, 'c'));
    expect(errorCode(() => trainer.step({ lr: -1 }))).toBe('ENGINE_INVALID_OPTIONS:lr');
    expect(errorCode(() => trainer.step({ betas: [0.9, 1] }))).toBe('ENGINE_INVALID_OPTIONS:betas');
    expect(errorCode(() => trainer.step({ eps: 0 }))).toBe('ENGINE_INVALID_OPTIONS:eps');
    expect(errorCode(() => trainer.step({ weightDecay: Number.NaN }))).toBe('ENGINE_INVALID_OPTIONS:weightDecay');
    expect(errorCode(() => trainer.step({ maxGradNorm: -1 }))).toBe('ENGINE_INVALID_OPTIONS:maxGradNorm');
    expect(trainer.pending).toBe(1);
    expect(trainer.steps).toBe(0);
    expect(maxAbsDiff(flat(model.exportLora(undefined, 'c')), before)).toBe(0);
    trainer.step({ maxGradNorm: 0 });
    expect(trainer.steps).toBe(1);
    trainer.dispose();
    model.dispose();
  });

  it('saves an adapter with its AdamW state and resumes it under another name exactly; without the state it starts afresh', async () => {
    const ce = crossEntropyCoefficients(batchB);
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 3, alpha: 32, targetModules: ['q_proj', 'down_proj', 'lm_head'], seed: 14 }, 'run');
    const trainer = new Trainer(model, { lr: 1e-2, adapter: 'run' });
    for (let i = 0; i < 2; i++) trainer.trainStep(batchB, ce);
    const dir = join(tmp, `state-${backend}`);
    await saveLoraAdapter(dir, model.exportLora('tiny-test', 'run'), { modelConfig: model.config });
    await writeOptimizerState(join(dir, 'optimizer.safetensors'), trainer.optimizerState());
    trainer.trainStep(batchB, ce);
    const continued = flat(model.exportLora(undefined, 'run'));

    model.loadLora(await loadLoraAdapter(dir, { modelConfig: model.config }), 'resumed');
    const resumed = new Trainer(model, { lr: 1e-2, adapter: 'resumed' });
    resumed.loadOptimizerState(await readOptimizerState(join(dir, 'optimizer.safetensors')));
    expect(resumed.steps).toBe(2);
    resumed.trainStep(batchB, ce);
    expect(maxAbsDiff(flat(model.exportLora(undefined, 'resumed')), continued)).toBeLessThan(1e-7);

    model.loadLora(await loadLoraAdapter(dir, { modelConfig: model.config }), 'fresh');
    const fresh = new Trainer(model, { lr: 1e-2, adapter: 'fresh' });
    expect(fresh.steps).toBe(0);
    fresh.trainStep(batchB, ce);
    expect(maxAbsDiff(flat(model.exportLora(undefined, 'fresh')), continued)).toBeGreaterThan(1e-5);
    for (const t of [trainer, resumed, fresh]) t.dispose();
    model.dispose();
  });

  it('refuses, before allocating, an adapter the heap cannot hold, naming the size and the setting', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    const r = 1_000_000;
    const need = loraStateBytes(config, r, ALL).trainingBytes;
    expect(need).toBeGreaterThan(4 * 1024 ** 3);
    const before = tf.memory().numBytes;
    let error: unknown;
    try {
      model.addLora({ r, alpha: 32, targetModules: ALL, seed: 1 }, 'huge');
    } catch (e) {
      error = e;
    }
    expect(isEngineError(error) && error.code).toBe('ENGINE_OUT_OF_MEMORY');
    expect((error as Error).message).toMatch(/adapter "huge" \(rank 1000000\) needs [\d.]+ MiB .* OPENTINKER_ENGINE_MEMORY_MB/);
    expect(tf.memory().numBytes).toBe(before);
    expect(model.adapterNames()).toEqual([]);
    // The default adapter keeps its single-adapter behaviour and errors.
    model.addLora({ r: 2, alpha: 4, seed: 1 });
    expect(model.hasLora).toBe(true);
    expect(model.adapterNames()).toEqual([DEFAULT_ADAPTER]);
    expect(errorCode(() => model.addLora({ r: 2, alpha: 4, seed: 1 }))).toBe('ENGINE_INVALID_OPTIONS:lora');
    expect(errorCode(() => new Trainer(model, { lr: 1, adapter: 'missing' }))).toBe('ENGINE_INVALID_OPTIONS:adapter');
    model.addLora({ r: 2, alpha: 4, seed: 2 }, 'second');
    expect(errorCode(() => model.mergeLora())).toBe('ENGINE_INVALID_OPTIONS:adapter');
    model.dispose();
  });
});
