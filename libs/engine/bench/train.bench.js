#!/usr/bin/env node
/**
 * Engine throughput on this machine: training tokens/s (forward + backward + AdamW) and KV-cache
 * sampling new-tokens/s, per preset, on the built package (run `npx tsc -b libs/engine` first).
 *
 *   node libs/engine/bench/train.bench.js [--backend wasm|cpu|tensorflow] [--presets tiny-char,bench-a]
 *        [--batch 32] [--seq 64] [--steps 10] [--sample-batch 32] [--new-tokens 32] [--prompt 8]
 *
 * Prints one JSON line per preset. Speed is measured here, never asserted in tests. Besides wall-clock
 * rates it prints rates per CPU-second of this process (`…PerCpuS`): the wasm backend runs on one
 * thread, so on a busy machine these show what an idle core would do.
 */
'use strict';
const os = require('node:os');
const engine = require('../dist/index.js');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function batchOf(rng, b, t, vocab) {
  const seqs = [];
  for (let i = 0; i < b; i++) seqs.push(Array.from({ length: t }, () => Math.floor(rng.uniform() * vocab)));
  return engine.padBatch(seqs);
}

function cpuSeconds(since) {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

async function main() {
  const backend = arg('backend', 'wasm');
  const presets = arg('presets', 'tiny-char,bench-a').split(',');
  const B = Number(arg('batch', 32));
  const T = Number(arg('seq', 64));
  const steps = Number(arg('steps', 10));
  const sb = Number(arg('sample-batch', 32));
  const newTokens = Number(arg('new-tokens', 32));
  const promptLen = Number(arg('prompt', 8));
  const info = await engine.initBackend({ backend });
  const load = os.loadavg()[0];
  console.error(`backend ${info.name}${info.simd ? ' (simd)' : ''}; load average ${load.toFixed(2)} on ${os.cpus().length} cores`);
  for (const name of presets) {
    const config = engine.modelPreset(name);
    const model = engine.Model.init(config, 1);
    const trainer = new engine.Trainer(model, { lr: 1e-4, maxGradNorm: 1 });
    const rng = new engine.Prng(7);
    const batch = batchOf(rng, B, T, config.vocab_size);
    const ce = engine.crossEntropyCoefficients(batch);
    for (let i = 0; i < 2; i++) trainer.trainStep(batch, ce); // warm-up: kernels set up, state allocated
    let t0 = process.hrtime.bigint();
    let c0 = process.cpuUsage();
    for (let i = 0; i < steps; i++) trainer.trainStep(batch, ce);
    const trainS = Number(process.hrtime.bigint() - t0) / 1e9;
    const trainCpuS = cpuSeconds(c0);

    const prompts = Array.from({ length: sb }, () => Array.from({ length: promptLen }, () => Math.floor(rng.uniform() * config.vocab_size)));
    const opts = { maxNewTokens: newTokens, temperature: 1, seed: 1, stopTokenIds: [] };
    engine.sample(model, prompts, { ...opts, maxNewTokens: 2 }); // warm-up
    const reps = 3;
    t0 = process.hrtime.bigint();
    c0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) engine.sample(model, prompts, opts);
    const sampleS = Number(process.hrtime.bigint() - t0) / 1e9;
    const sampleCpuS = cpuSeconds(c0);
    console.log(
      JSON.stringify({
        preset: name,
        backend: info.name,
        params: engine.countParameters(config),
        fastMatMul: Boolean(info.fastMatMul),
        train: {
          batch: B,
          seq: T,
          steps,
          tokensPerS: Math.round((B * T * steps) / trainS),
          tokensPerCpuS: Math.round((B * T * steps) / trainCpuS),
          msPerStep: Math.round((trainS / steps) * 1000),
        },
        sample: {
          batch: sb,
          prompt: promptLen,
          newTokens,
          newTokensPerS: Math.round((sb * newTokens * reps) / sampleS),
          newTokensPerCpuS: Math.round((sb * newTokens * reps) / sampleCpuS),
        },
        peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
        loadAvg1m: Number(load.toFixed(2)),
      }),
    );
    trainer.dispose();
    model.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
