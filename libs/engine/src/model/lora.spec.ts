import * as tf from '@tensorflow/tfjs-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadHfModelDir, saveHfModelDir } from '../io/hf-model-dir';
import { loadLoraAdapter, peftKey, saveLoraAdapter } from '../io/peft-adapter';
import { SafetensorsFile } from '../io/safetensors';
import { errorCode, randomisedAdapter } from '../testing/lora';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { ByteTokenizer } from '../tokenizer/byte-tokenizer';
import { crossEntropyCoefficients } from '../train/logprobs';
import { Trainer } from '../train/trainer';
import { sample } from '../sampling/sampler';
import { modelPreset } from './model-config';
import { padBatch } from './token-batch';
import { Model } from './transformer';
import { initWeights } from './weights';

// The byte tokenizer's 260 ids, so a merged model saves as a complete Hugging Face folder.
const config = { ...modelPreset('tiny-test'), vocab_size: 260 };
const weights = initWeights(config, 7);
const batch = padBatch([
  [1, 2, 3, 4, 5, 6, 7, 8],
  [9, 10, 11, 12],
]);
const ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

function logits(model: Model): Float32Array {
  return tf.tidy(() => model.logits(batch).dataSync() as Float32Array);
}

describe.each(TEST_BACKENDS)('LoRA on %s', (backend) => {
  useBackend(backend);
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'lora-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('a fresh adapter leaves the logits unchanged; A is Kaiming-uniform, B zero', () => {
    const model = Model.fromWeights(config, weights);
    const before = logits(model);
    model.addLora({ r: 4, alpha: 8, targetModules: ALL, seed: 1 });
    expect(maxAbsDiff(logits(model), before)).toBe(0);
    const adapter = model.exportLora();
    expect(adapter.weights.size).toBe(config.num_hidden_layers * 7);
    const q = adapter.weights.get('model.layers.0.self_attn.q_proj')!;
    expect(q.A.shape).toEqual([4, config.hidden_size]);
    const bound = 1 / Math.sqrt(config.hidden_size);
    expect(Math.max(...q.A.data.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...q.A.data.map(Math.abs))).toBeGreaterThan(bound / 2);
    expect(q.B.data.every((x) => x === 0)).toBe(true);
    const down = adapter.weights.get('model.layers.1.mlp.down_proj')!;
    expect([down.A.shape, down.B.shape]).toEqual([
      [4, config.intermediate_size],
      [config.hidden_size, 4],
    ]);
    model.dispose();
  });

  it('trains only the factors: base bit-identical, adapter changed, loss down; the adapter-off scores stay the base ones', () => {
    const model = Model.fromWeights(config, weights);
    const baseScores = model.scoreTokens(batch);
    model.addLora({ r: 4, alpha: 16, targetModules: ['q_proj', 'v_proj', 'up_proj'], seed: 2 });
    expect([...model.namedVariables().keys()]).toContain(peftKey('model.layers.0.self_attn.q_proj', 'A'));
    expect(model.namedVariables().size).toBe(config.num_hidden_layers * 3 * 2);
    const trainer = new Trainer(model, { lr: 1e-2, weightDecay: 0 });
    const coef = crossEntropyCoefficients(batch);
    const start = tf.memory().numTensors;
    const losses: number[] = [];
    for (let i = 0; i < 20; i++) losses.push(trainer.trainStep(batch, coef).loss);
    expect(tf.memory().numTensors).toBe(start);
    expect(losses[19]).toBeLessThan(losses[0] - 0.1);
    const after = model.exportWeights();
    for (const [name, w] of weights) expect(maxAbsDiff(after.get(name)!.data, w.data)).toBe(0);
    const trained = model.exportLora();
    expect(Math.max(...trained.weights.get('model.layers.0.self_attn.q_proj')!.B.data.map(Math.abs))).toBeGreaterThan(0);
    // Reference policy under a LoRA: the base alone, as before training.
    const ref = model.scoreTokens(batch, { adapter: false });
    expect(maxAbsDiff(ref.logProbs, baseScores.logProbs)).toBeLessThan(1e-6);
    const base = Model.fromWeights(config, weights);
    expect(
      maxAbsDiff(
        model.withoutAdapter(() => logits(model)),
        logits(base),
      ),
    ).toBeLessThan(1e-6);
    base.dispose();
    expect(maxAbsDiff(model.scoreTokens(batch).logProbs, baseScores.logProbs)).toBeGreaterThan(1e-3);
    trainer.dispose();
    model.dispose();
  });

  it('round-trips through a PEFT folder into a fresh model with the same base', async () => {
    const model = Model.fromWeights(config, weights);
    model.addLora({ r: 2, alpha: 4, targetModules: ['k_proj', 'o_proj', 'gate_proj', 'down_proj'], seed: 3 });
    const adapter = randomisedAdapter(model.exportLora(), 4, 0.1);
    model.removeLora();
    model.loadLora(adapter);
    const expected = logits(model);
    const dir = join(tmp, `adapter-${backend}`);
    await saveLoraAdapter(dir, model.exportLora('tiny-test'), { modelConfig: config });
    const json = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    expect(json).toMatchObject({ peft_type: 'LORA', r: 2, lora_alpha: 4, base_model_name_or_path: 'tiny-test', target_modules: ['k_proj', 'o_proj', 'gate_proj', 'down_proj'] });
    const file = await SafetensorsFile.open(join(dir, 'adapter_model.safetensors'));
    expect(file.names).toContain('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight');
    await file.close();
    const fresh = Model.fromWeights(config, weights);
    fresh.loadLora(await loadLoraAdapter(dir, { modelConfig: config }));
    expect(maxAbsDiff(logits(fresh), expected)).toBe(0);
    fresh.dispose();
    model.dispose();
  });

  it('merges into the base within 1e-5 and saves as a plain Hugging Face folder', async () => {
    const model = Model.fromWeights(config, weights);
    model.addLora({ r: 4, alpha: 8, targetModules: ALL, seed: 5 });
    const adapter = randomisedAdapter(model.exportLora(), 6, 0.1);
    model.removeLora();
    model.loadLora(adapter);
    const withAdapter = logits(model);
    const start = tf.memory().numTensors;
    model.mergeLora();
    expect(tf.memory().numTensors).toBe(start - adapter.weights.size * 2);
    expect(model.hasLora).toBe(false);
    expect(maxAbsDiff(logits(model), withAdapter)).toBeLessThan(1e-5);
    const base = Model.fromWeights(config, weights);
    expect(maxAbsDiff(logits(model), logits(base))).toBeGreaterThan(1e-3);
    base.dispose();
    const dir = join(tmp, `merged-${backend}`);
    await saveHfModelDir(dir, { config, weights: model.exportWeights(), tokenizer: new ByteTokenizer() });
    const back = await loadHfModelDir(dir);
    expect([...back.weights.keys()].some((k) => k.includes('lora'))).toBe(false);
    const reloaded = Model.fromWeights(back.config, back.weights);
    expect(maxAbsDiff(logits(reloaded), withAdapter)).toBeLessThan(1e-5);
    reloaded.dispose();
    model.dispose();
  });

  it('samples under the adapter: sampled log-probs match the recomputed ones to 1e-4', () => {
    const model = Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 4, alpha: 8, targetModules: ALL, seed: 8 });
    const adapter = randomisedAdapter(model.exportLora(), 9, 0.1);
    model.removeLora();
    model.loadLora(adapter);
    const prompts = [
      [1, 2, 3],
      [4, 5],
    ];
    const outs = sample(model, prompts, { maxNewTokens: 6, temperature: 1, seed: 3, stopTokenIds: [] });
    const full = padBatch(prompts.map((p, i) => [...p, ...outs[i].tokens]));
    const withAdapter = model.scoreTokens(full);
    const base = model.scoreTokens(full, { adapter: false });
    let worst = 0;
    let apart = 0;
    outs.forEach((o, i) =>
      o.logProbs.forEach((lp, j) => {
        const at = i * full.seqLen + prompts[i].length + j;
        worst = Math.max(worst, Math.abs(withAdapter.logProbs[at] - lp));
        apart = Math.max(apart, Math.abs(base.logProbs[at] - lp));
      }),
    );
    expect(worst).toBeLessThan(1e-4);
    expect(apart).toBeGreaterThan(1e-3);
    // A frozen base (trainable: false) still trains its adapter.
    const trainer = new Trainer(model, { lr: 1e-2 });
    trainer.trainStep(full, crossEntropyCoefficients(full));
    trainer.dispose();
    model.dispose();
  });

  it('refuses bad options with typed errors', () => {
    const model = Model.fromWeights(config, weights);
    expect(errorCode(() => model.addLora({ r: 0, alpha: 8, seed: 1 }))).toBe('ENGINE_INVALID_OPTIONS:r');
    expect(errorCode(() => model.addLora({ r: 2, alpha: 8, dropout: 0.1, seed: 1 }))).toBe('ENGINE_INVALID_OPTIONS:dropout');
    expect(errorCode(() => model.addLora({ r: 2, alpha: 8, targetModules: ['embed_tokens'], seed: 1 }))).toBe('ENGINE_INVALID_OPTIONS:targetModules');
    expect(errorCode(() => model.mergeLora())).toBe('ENGINE_INVALID_OPTIONS:lora');
    model.addLora({ r: 2, alpha: 8, seed: 1 });
    expect(errorCode(() => model.addLora({ r: 2, alpha: 8, seed: 1 }))).toBe('ENGINE_INVALID_OPTIONS:lora');
    model.dispose();
  });
});
