#!/usr/bin/env node
/**
 * Engine throughput on this machine: training tokens/s (forward + backward + clip + AdamW) and KV-cache
 * sampling new-tokens/s, per preset, on the built package (run `npx tsc -b libs/engine` first).
 *
 *   node libs/engine/bench/train.bench.js [--backend wasm|cpu|tensorflow] [--presets tiny-char,bench-a]
 *        [--batch 32] [--seq 64] [--steps 10] [--warmup 2] [--sample-batch 32] [--new-tokens 32]
 *        [--prompt 8] [--sample-reps 3]
 *   node libs/engine/bench/train.bench.js --config a|b [...]      issue 4's sizes (a: bench-a, batch 32 × 64;
 *                                                                 b: bench-b, batch 16 × 128); explicit flags win
 *   node libs/engine/bench/train.bench.js --config a --export-check DIR
 *        writes DIR/model.safetensors (initial weights, Hugging Face names) and DIR/check.safetensors (a
 *        batch, its logits, and the loss, gradient norm and logits after one training step) for
 *        `torch_reference.py --check DIR`.
 *
 * Prints one JSON line per preset. Speed is measured here, never asserted in tests. Besides wall-clock
 * rates it prints rates per CPU-second of this process (`…PerCpuS`): the wasm backend runs on one
 * thread, so on a busy machine these show what an idle core would do. `peakRssMiB` is the process's
 * peak resident set so far (run one preset per process to get one size's peak). vs-torch.bench.js runs
 * this side by side with PyTorch.
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const engine = require('../dist/index.js');

/** Issue 4's benchmark sizes (section 4): preset and training batch shape. torch_reference.py has the same table. */
const SIZES = {
  a: { preset: 'bench-a', batch: 32, seq: 64 },
  b: { preset: 'bench-b', batch: 16, seq: 128 },
};

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function batchOf(rng, b, t, vocab) {
  const seqs = [];
  for (let i = 0; i < b; i++) seqs.push(Array.from({ length: t }, () => Math.floor(rng.uniform() * vocab)));
  return engine.padBatch(seqs);
}

/** CPU seconds (user + system) of this process since `since`, or since it started. */
function cpuSeconds(since) {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/** Logits of a batch as a Float32Array (the tensor is freed). */
function logitsOf(model, batch) {
  const t = model.logits(batch);
  const data = Float32Array.from(t.dataSync());
  t.dispose();
  return data;
}

async function exportCheck(dir, sizeName, config, opts) {
  fs.mkdirSync(dir, { recursive: true });
  const model = engine.Model.init(config, opts.seed);
  await engine.writeSafetensors(path.join(dir, 'model.safetensors'), model.exportWeights(), { metadata: { format: 'pt' } });
  const rng = new engine.Prng(opts.seed + 1);
  const batch = batchOf(rng, opts.batch, opts.seq, config.vocab_size);
  const logits0 = logitsOf(model, batch);
  const weightDecay = 0.01;
  const trainer = new engine.Trainer(model, { lr: opts.lr, maxGradNorm: opts.maxGradNorm, weightDecay });
  const r = trainer.trainStep(batch, engine.crossEntropyCoefficients(batch));
  const logits1 = logitsOf(model, batch);
  const rows = opts.batch * opts.seq;
  await engine.writeSafetensors(
    path.join(dir, 'check.safetensors'),
    [
      ['ids', { shape: [opts.batch, opts.seq], data: batch.ids }],
      ['logits0', { shape: [rows, config.vocab_size], data: logits0 }],
      ['logits1', { shape: [rows, config.vocab_size], data: logits1 }],
    ],
    {
      metadata: {
        size: sizeName,
        config: JSON.stringify(config),
        loss: String(r.loss),
        gradNorm: String(r.gradNorm),
        lr: String(opts.lr),
        maxGradNorm: String(opts.maxGradNorm),
        weightDecay: String(weightDecay),
      },
    },
  );
  console.log(JSON.stringify({ side: 'engine', mode: 'export-check', size: sizeName, dir, params: engine.countParameters(config), loss: r.loss, gradNorm: r.gradNorm }));
  trainer.dispose();
  model.dispose();
}

async function main() {
  const backend = arg('backend', 'wasm');
  const sizeName = arg('config');
  if (sizeName !== undefined && !SIZES[sizeName]) throw new Error(`--config must be one of ${Object.keys(SIZES).join(', ')}, got ${sizeName}`);
  const size = sizeName ? SIZES[sizeName] : undefined;
  const presets = size ? [size.preset] : arg('presets', 'tiny-char,bench-a').split(',');
  const B = Number(arg('batch', size ? size.batch : 32));
  const T = Number(arg('seq', size ? size.seq : 64));
  const steps = Number(arg('steps', 10));
  const warmup = Number(arg('warmup', 2));
  const sb = Number(arg('sample-batch', 32));
  const newTokens = Number(arg('new-tokens', 32));
  const promptLen = Number(arg('prompt', 8));
  const reps = Number(arg('sample-reps', 3));
  const lr = 1e-4;
  const maxGradNorm = 1;
  const info = await engine.initBackend({ backend });
  const load = os.loadavg()[0];
  console.error(`backend ${info.name}${info.simd ? ' (simd)' : ''}; load average ${load.toFixed(2)} on ${os.cpus().length} cores`);
  const exportDir = arg('export-check');
  if (exportDir !== undefined) {
    if (!size) throw new Error('--export-check needs --config a|b');
    await exportCheck(exportDir, sizeName, engine.modelPreset(size.preset), { seed: 1, batch: Number(arg('batch', 4)), seq: T, lr, maxGradNorm });
    return;
  }
  for (const name of presets) {
    const config = engine.modelPreset(name);
    const model = engine.Model.init(config, 1);
    const trainer = new engine.Trainer(model, { lr, maxGradNorm });
    const rng = new engine.Prng(7);
    const batch = batchOf(rng, B, T, config.vocab_size);
    const ce = engine.crossEntropyCoefficients(batch);
    for (let i = 0; i < warmup; i++) trainer.trainStep(batch, ce); // warm-up: kernels set up, state allocated
    const stepMs = [];
    let lastLoss = NaN;
    let t0 = process.hrtime.bigint();
    let c0 = process.cpuUsage();
    for (let i = 0; i < steps; i++) {
      const s = process.hrtime.bigint();
      lastLoss = trainer.trainStep(batch, ce).loss;
      stepMs.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    const trainS = Number(process.hrtime.bigint() - t0) / 1e9;
    const trainCpuS = cpuSeconds(c0);

    const prompts = Array.from({ length: sb }, () => Array.from({ length: promptLen }, () => Math.floor(rng.uniform() * config.vocab_size)));
    const opts = { maxNewTokens: newTokens, temperature: 1, seed: 1, stopTokenIds: [] };
    engine.sample(model, prompts, { ...opts, maxNewTokens: 2 }); // warm-up
    const repMs = [];
    t0 = process.hrtime.bigint();
    c0 = process.cpuUsage();
    for (let i = 0; i < reps; i++) {
      const s = process.hrtime.bigint();
      const out = engine.sample(model, prompts, opts);
      repMs.push(Number(process.hrtime.bigint() - s) / 1e6);
      if (out.some((o) => o.tokens.length !== newTokens)) throw new Error('sampling stopped early');
    }
    const sampleS = Number(process.hrtime.bigint() - t0) / 1e9;
    const sampleCpuS = cpuSeconds(c0);
    console.log(
      JSON.stringify({
        side: 'engine',
        ...(sizeName ? { size: sizeName } : {}),
        preset: name,
        backend: info.name,
        params: engine.countParameters(config),
        matmul: info.matmul ?? null,
        backendInfo: info,
        train: {
          batch: B,
          seq: T,
          warmup,
          steps,
          tokensPerS: Math.round((B * T * steps) / trainS),
          tokensPerCpuS: Math.round((B * T * steps) / trainCpuS),
          msPerStep: Math.round((trainS / steps) * 1000),
          msPerStepMedian: Math.round(median(stepMs) * 10) / 10,
          msPerStepMin: Math.round(Math.min(...stepMs) * 10) / 10,
          lastLoss,
        },
        sample: {
          batch: sb,
          prompt: promptLen,
          newTokens,
          reps,
          newTokensPerS: Math.round((sb * newTokens * reps) / sampleS),
          newTokensPerCpuS: Math.round((sb * newTokens * reps) / sampleCpuS),
          msPerRepMin: Math.round(Math.min(...repMs) * 10) / 10,
        },
        peakRssMiB: Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10,
        cpuSeconds: Math.round(cpuSeconds() * 100) / 100,
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
