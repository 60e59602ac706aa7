#!/usr/bin/env node
'use strict';
/**
 * LoRA benchmark of @opentinker/engine: full fine-tuning step vs LoRA step (r 8, q/k/v/o and r 8 on
 * all seven linears) on a preset, trainable parameter counts, and merge time. Prints numbers; asserts nothing.
 *
 * Run after building the package:  (cd libs/engine && npx tsc -b tsconfig.json) && node libs/engine/bench/lora.bench.cjs [preset, default tiny-char] [backend, default wasm]
 */
const eng = require('../dist/index.js');
const tf = require('@tensorflow/tfjs-core');

const preset = process.argv[2] ?? 'tiny-char';
const backend = process.argv[3] ?? 'wasm';
const STEPS = 10;

function batchOf(config) {
  const rows = [];
  for (let r = 0; r < 4; r++) rows.push(Array.from({ length: 64 }, (_, t) => (r * 31 + t * 7) % config.vocab_size));
  return eng.padBatch(rows);
}

function timeSteps(model, batch) {
  const trainer = new eng.Trainer(model, { lr: 1e-3 });
  const coef = eng.crossEntropyCoefficients(batch);
  trainer.trainStep(batch, coef); // warm-up
  const t0 = process.hrtime.bigint();
  let loss = 0;
  for (let i = 0; i < STEPS; i++) loss = trainer.trainStep(batch, coef).loss;
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / STEPS;
  trainer.dispose();
  return { ms, loss };
}

(async () => {
  const info = await eng.initBackend({ backend });
  const config = eng.modelPreset(preset);
  const weights = eng.initWeights(config, 1);
  const batch = batchOf(config);
  console.log(`${preset} on ${info.name}, batch 4×64, mean of ${STEPS} steps`);
  const count = (model) => [...model.namedVariables().values()].reduce((n, v) => n + v.size, 0);
  {
    const model = eng.Model.fromWeights(config, weights);
    const { ms } = timeSteps(model, batch);
    console.log(`${'full fine-tuning'.padEnd(30)} ${ms.toFixed(1).padStart(8)} ms/step  ${count(model).toLocaleString().padStart(12)} trainable`);
    model.dispose();
  }
  for (const targets of [['q_proj', 'k_proj', 'v_proj', 'o_proj'], eng.LORA_TARGETS.slice()]) {
    const model = eng.Model.fromWeights(config, weights, { trainable: false });
    model.addLora({ r: 8, alpha: 16, targetModules: targets, seed: 1 });
    const { ms } = timeSteps(model, batch);
    const label = `LoRA r 8, ${targets.length === 4 ? 'attention' : 'all linears'}`;
    console.log(`${label.padEnd(30)} ${ms.toFixed(1).padStart(8)} ms/step  ${count(model).toLocaleString().padStart(12)} trainable`);
    const t0 = process.hrtime.bigint();
    model.mergeLora();
    console.log(`${'  merge'.padEnd(30)} ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1).padStart(8)} ms`);
    model.dispose();
  }
  console.log(`tensors left: ${tf.memory().numTensors}`);
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
