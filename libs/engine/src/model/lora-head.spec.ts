import * as tf from '@tensorflow/tfjs-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadHfModelDir, saveHfModelDir } from '../io/hf-model-dir';
import { loadLoraAdapter, peftKey, saveLoraAdapter } from '../io/peft-adapter';
import { SafetensorsFile, readSafetensors } from '../io/safetensors';
import { randomisedAdapter } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { ByteTokenizer } from '../tokenizer/byte-tokenizer';
import { Trainer } from '../train/trainer';
import { Prng } from '../util/prng';
import { loraHeadScores } from './lora-head';
import { modelPreset, validateModelConfig, type ModelConfig } from './model-config';
import { padBatch } from './token-batch';
import { Model } from './transformer';
import { initWeights } from './weights';

// The unembedding LoRA (`lm_head`, Tinker's train_unembed): PEFT's own outputs, the blockwise head's
// gradient against autodiff of the plain formula and against finite differences, merging (tied and
// untied), and the PEFT folder.

const golden = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'peft-lm-head');
const expected = JSON.parse(readFileSync(join(golden, 'expected.json'), 'utf8')) as { rows: number[][]; logits: number[]; baseLogits: number[]; shape: number[] };
const tied: ModelConfig = { ...modelPreset('tiny-test'), vocab_size: 260, tie_word_embeddings: true };
const untied: ModelConfig = { ...tied, tie_word_embeddings: false };
const batch = padBatch([
  [1, 2, 3, 4, 5, 6, 7],
  [8, 9, 10],
]);

function logits(model: Model, rows = batch): Float32Array {
  return tf.tidy(() => model.logits(rows).dataSync() as Float32Array);
}

describe.each(TEST_BACKENDS)('unembedding LoRA (lm_head) on %s', (backend) => {
  useBackend(backend);
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'lora-head-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("gives PEFT's logits for an adapter PEFT saved on a tied model (its copy of the head skipped)", async () => {
    // The base as transformers saved it (config and weights; the fixture has no tokenizer).
    const base = {
      config: validateModelConfig(JSON.parse(readFileSync(join(golden, 'base', 'config.json'), 'utf8'))),
      weights: (await readSafetensors(join(golden, 'base', 'model.safetensors'))).tensors,
    };
    expect(base.config.tie_word_embeddings).toBe(true);
    const adapter = await loadLoraAdapter(join(golden, 'adapter'), { modelConfig: base.config });
    expect(adapter.weights.has('lm_head')).toBe(true);
    const file = await SafetensorsFile.open(join(golden, 'adapter', 'adapter_model.safetensors'));
    expect(file.names).toContain('base_model.model.lm_head.base_layer.weight');
    await file.close();
    for (const trainable of [true, false]) {
      const model = Model.fromWeights(base.config, new Map(base.weights), { trainable });
      const rows = padBatch(expected.rows);
      expect(maxAbsDiff(logits(model, rows), expected.baseLogits)).toBeLessThan(1e-4);
      model.loadLora(adapter, 'peft');
      expect(
        maxAbsDiff(
          model.withAdapter('peft', () => logits(model, rows)),
          expected.logits,
        ),
      ).toBeLessThan(1e-4);
      // Scoring (the blockwise head) agrees with a log-softmax of those logits.
      const lp = model.scoreTokens(rows, { adapter: 'peft' }).logProbs;
      const [, t, v] = expected.shape;
      for (let r = 0; r < rows.batchSize; r++) {
        for (let i = 1; i < t; i++) {
          const row = expected.logits.slice((r * t + i - 1) * v, (r * t + i) * v);
          const max = Math.max(...row);
          const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
          expect(Math.abs(lp[r * t + i] - (row[rows.ids[r * t + i]] - lse))).toBeLessThan(1e-4);
        }
      }
      model.dispose();
    }
  });

  it.each([
    ['native (frozen) head', false],
    ['heap head', true],
  ])('the blockwise head with a %s: values and gradients equal autodiff of the plain formula, per-row mask included', (_name, trainable) => {
    const config = untied;
    const model = Model.fromWeights(config, initWeights(config, 3), { trainable: trainable as boolean });
    const rng = new Prng(4);
    const n = 5;
    const d = config.hidden_size;
    const v = config.vocab_size;
    const r = 3;
    const head = tf.tensor2d(initWeights(config, 3).get('lm_head.weight')!.data, [v, d]);
    const headIn = (model as unknown as { head: { native?: unknown; variable?: tf.Tensor2D } }).head;
    const h = tf.tensor2d(
      Float32Array.from({ length: n * d }, () => rng.normal()),
      [n, d],
    );
    const A = tf.tensor2d(
      Float32Array.from({ length: d * r }, () => rng.normal() * 0.3),
      [d, r],
    );
    const B = tf.tensor2d(
      Float32Array.from({ length: r * v }, () => rng.normal() * 0.3),
      [r, v],
    );
    const mask = tf.tensor2d(
      Float32Array.from({ length: n * r }, (_, i) => (i % 4 === 1 ? 0 : 1)),
      [n, r],
    );
    const targets = Int32Array.from({ length: n }, (_, i) => (i * 37) % v);
    const cLp = tf.tensor1d(Float32Array.from({ length: n }, () => rng.normal()));
    const cEnt = tf.tensor1d(Float32Array.from({ length: n }, () => rng.normal()));
    for (const withEntropy of [true, false]) {
      const loss = (lp: tf.Tensor, ent: tf.Tensor) => (withEntropy ? tf.add(tf.sum(tf.mul(lp, cLp)), tf.sum(tf.mul(ent, cEnt))) : tf.sum(tf.mul(lp, cLp))) as tf.Scalar;
      const mine = tf.grads((hh: tf.Tensor, aa: tf.Tensor, bb: tf.Tensor) => {
        const s = loraHeadScores(hh as tf.Tensor2D, (headIn.native ?? headIn.variable) as tf.Tensor2D, { A: aa as tf.Tensor2D, B: bb as tf.Tensor2D, mask }, targets, true);
        return loss(s.logProbs, s.entropy);
      })([h, A, B]);
      const plain = tf.grads((hh: tf.Tensor, aa: tf.Tensor, bb: tf.Tensor) => {
        const z = tf.add(tf.matMul(hh, head, false, true), tf.matMul(tf.mul(tf.matMul(hh, aa), mask), bb));
        const logp = tf.logSoftmax(z);
        const lp = tf.gather(
          tf.reshape(logp, [n * v]),
          tf.tensor1d(
            Int32Array.from(targets, (t, i) => i * v + t),
            'int32',
          ),
        );
        const ent = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1));
        return loss(lp, ent);
      })([h, A, B]);
      mine.forEach((g, i) => {
        const want = plain[i].dataSync() as Float32Array;
        const scale = Math.max(...want.map(Math.abs));
        expect(maxAbsDiff(g.dataSync() as Float32Array, want) / scale).toBeLessThan(1e-5);
      });
      tf.dispose([...mine, ...plain]);
    }
    tf.dispose([head, h, A, B, mask, cLp, cEnt]);
    model.dispose();
  });

  it('trains an lm_head adapter on a tied frozen base: gradient against central differences, recomputed layers the same, base untouched', () => {
    const weights = initWeights(tied, 5);
    const model = Model.fromWeights(tied, weights, { trainable: false });
    model.addLora({ r: 2, alpha: 32, targetModules: ['q_proj', 'lm_head'], seed: 6 }, 'u');
    model.loadLora(randomisedAdapter(model.exportLora(undefined, 'u'), 7, 0.3), 'v');
    const coef = Float32Array.from({ length: batch.ids.length }, (_, i) => Math.sin(i));
    const surrogate = () => {
      const s = model.scoreTokens(batch, { adapter: 'v' });
      let total = 0;
      for (let i = 0; i < s.logProbs.length; i++) total += coef[i] * s.logProbs[i] + 0.3 * coef[i] * s.entropy[i];
      return total;
    };
    const coefficients = { logProbCoef: coef, entropyCoef: coef.map((c) => 0.3 * c) };
    const grads = (recompute: boolean) => {
      const trainer = new Trainer(model, { lr: 0, adapter: 'v', recompute });
      const vars = model.namedVariables('v');
      const r = model.withAdapter('v', () =>
        tf.variableGrads(() => {
          const s = trainer.model.nextTokenScores(batch);
          return tf.add(tf.sum(tf.mul(s.logProbs, tf.tensor1d(shift(coef)))), tf.sum(tf.mul(s.entropy, tf.tensor1d(shift(coef).map((c) => 0.3 * c))))) as tf.Scalar;
        }, [...vars.values()]),
      );
      trainer.accumulate(batch, coefficients);
      const acc = (trainer as unknown as { accumulated: Map<string, tf.Tensor> }).accumulated;
      const out = new Map([...vars.keys()].map((name) => [name, Float32Array.from(acc.get(name)!.dataSync() as Float32Array)]));
      const direct = new Map([...vars].map(([name, variable]) => [name, Float32Array.from(r.grads[variable.name].dataSync() as Float32Array)]));
      tf.dispose([r.value, ...Object.values(r.grads)]);
      trainer.dispose();
      return { out, direct };
    };
    const shift = (c: Float32Array) => {
      const next = new Float32Array(c.length);
      for (let r = 0; r < batch.batchSize; r++)
        for (let t = 1; t < batch.seqLen; t++) next[r * batch.seqLen + t - 1] = batch.mask[r * batch.seqLen + t] ? c[r * batch.seqLen + t] : 0;
      return next;
    };
    const taped = grads(false);
    const recomputed = grads(true);
    const headB = peftKey('lm_head', 'B');
    const headA = peftKey('lm_head', 'A');
    for (const [name, g] of taped.out) {
      expect(maxAbsDiff(recomputed.out.get(name)!, g)).toBeLessThan(1e-5);
      expect(maxAbsDiff(taped.direct.get(name)!, g)).toBeLessThan(1e-5);
    }
    // Central differences on a few entries of the head's factors (float32 model, step 1e-2).
    const vars = model.namedVariables('v');
    for (const [name, index] of [
      [headA, 3],
      [headA, 17],
      [headB, 5],
      [headB, 301],
    ] as const) {
      const variable = vars.get(name)!;
      const values = Float32Array.from(variable.dataSync() as Float32Array);
      const at = (delta: number) => {
        const changed = Float32Array.from(values);
        changed[index] += delta;
        variable.assign(tf.tensor(changed, variable.shape));
        return surrogate();
      };
      const eps = 1e-2;
      const fd = (at(eps) - at(-eps)) / (2 * eps);
      variable.assign(tf.tensor(values, variable.shape));
      const g = taped.out.get(name)![index];
      expect(Math.abs(fd - g)).toBeLessThan(2e-3 * Math.max(1, Math.abs(g)));
    }
    const exported = model.exportWeights();
    for (const [name, w] of weights) expect(maxAbsDiff(exported.get(name)!.data, w.data)).toBe(0);
    model.dispose();
  });

  it.each([
    ['tied', tied],
    ['untied', untied],
  ])('a fresh lm_head adapter changes nothing; merged on a %s model it gives the adapter logits and saves as a plain folder', async (kind, config) => {
    const weights = initWeights(config as ModelConfig, 8);
    const model = Model.fromWeights(config as ModelConfig, weights);
    const base = logits(model);
    model.addLora({ r: 3, alpha: 6, targetModules: ['v_proj', 'lm_head'], seed: 9 });
    expect(maxAbsDiff(logits(model), base)).toBe(0);
    const adapter = randomisedAdapter(model.exportLora(), 10, 0.3);
    model.removeLora();
    model.loadLora(adapter);
    const adapted = logits(model);
    expect(maxAbsDiff(adapted, base)).toBeGreaterThan(1e-3);
    // PEFT folder: lm_head's factors under PEFT's keys, no copy of the head (save_embedding_layers=False).
    const dir = join(tmp, `adapter-${kind}-${backend}`);
    await saveLoraAdapter(dir, model.exportLora('tiny-test'), { modelConfig: model.config });
    const file = await SafetensorsFile.open(join(dir, 'adapter_model.safetensors'));
    expect(file.names).toEqual(expect.arrayContaining(['base_model.model.lm_head.lora_A.weight', 'base_model.model.lm_head.lora_B.weight']));
    expect(file.names.some((n) => n.includes('base_layer'))).toBe(false);
    await file.close();
    const fresh = Model.fromWeights(config as ModelConfig, weights, { trainable: false });
    fresh.loadLora(await loadLoraAdapter(dir, { modelConfig: config as ModelConfig }));
    expect(maxAbsDiff(logits(fresh), adapted)).toBeLessThan(1e-5);
    fresh.mergeLora();
    expect(maxAbsDiff(logits(fresh), adapted)).toBeLessThan(1e-4);
    model.mergeLora();
    expect(maxAbsDiff(logits(model), adapted)).toBeLessThan(1e-4);
    expect(model.config.tie_word_embeddings).toBe(false);
    const merged = model.exportWeights();
    expect(maxAbsDiff(merged.get('model.embed_tokens.weight')!.data, weights.get('model.embed_tokens.weight')!.data)).toBe(0);
    expect(merged.has('lm_head.weight')).toBe(true);
    const out = join(tmp, `merged-${kind}-${backend}`);
    await saveHfModelDir(out, { config: model.config, weights: merged, tokenizer: new ByteTokenizer() });
    const back = await loadHfModelDir(out);
    const reloaded = Model.fromWeights(back.config, back.weights);
    expect(maxAbsDiff(logits(reloaded), adapted)).toBeLessThan(1e-4);
    for (const m of [model, fresh, reloaded]) m.dispose();
  });
});
