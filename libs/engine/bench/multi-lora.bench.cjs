#!/usr/bin/env node
'use strict';
/**
 * Many LoRA adapters on one base model in one process (what a Tinker session with several training
 * clients runs): sampling and training throughput of N adapters served one after the other
 * ("interleaved") against one adapter alone, and sampling with the N adapters' requests batched into
 * one pass per token (per-row adapters) — plus the process's peak RSS and the heap the adapters take.
 *
 *   node libs/engine/bench/multi-lora.bench.cjs --model DIR [--adapters 8] [--rank 16] [--prompt 32]
 *        [--new 16] [--seq 128] [--steps 1] [--reps 2] [--threads 2] [--no-unembed] [--out FILE.json]
 *   DIR: a Hugging Face folder, e.g. a Qwen2.5-0.5B-shaped random one from
 *        `node libs/engine/bench/make-checkpoint.cjs --shape qwen2.5-0.5b --out /tmp/qwen2.5-0.5b-random`.
 * Adapters target every linear (and lm_head unless --no-unembed), as Tinker's defaults do, with random B
 * so each adapter changes the outputs. Sampling: one prompt per adapter, temperature 1, no stop token.
 * Training: one row of --seq tokens per adapter and step, cross-entropy, AdamW; with lm_head targeted, a
 * step and a scoring pass of one adapter against one on the layer linears only (what unembedding costs).
 * Rounds alternate the order of the cases; medians are reported with the machine's load. Needs a built
 * engine.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const engine = require(path.join(__dirname, '..', 'dist', 'index.js'));
const { randomiseLoraB } = require('./bench-process.cjs');

function parseArgs(argv) {
  const o = { adapters: 8, rank: 16, prompt: 32, new: 16, seq: 128, steps: 1, reps: 2, threads: 2, unembed: true, seed: 7 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--no-unembed') {
      o.unembed = false;
      continue;
    }
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    const v = argv[++i];
    o[key] = ['model', 'out'].includes(key) ? v : Number(v);
  }
  if (!o.model) throw new Error('--model DIR is required');
  return o;
}

const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));
const mib = (b) => Math.round(b / 1024 / 1024);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

let peakRss = 0;
const watch = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);

function randomRows(rows, len, vocab, rng) {
  return Array.from({ length: rows }, () => Array.from({ length: len }, () => Math.floor(rng.uniform() * vocab)));
}

function timed(fn) {
  const t0 = performance.now();
  fn();
  return (performance.now() - t0) / 1000;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const loadStart = load();
  const backend = await engine.initBackend({ threads: o.threads });
  const info = await engine.inspectHfModelDir(o.model);
  const model = engine.Model.fromWeights(info.config, await engine.mapHfModelWeights(info), { trainable: false });
  const rssBase = process.memoryUsage().rss;
  const vocab = Math.min(info.tokenizer.vocabSize, info.config.vocab_size);
  const rng = new engine.Prng(o.seed);
  const targets = [...engine.LORA_TARGETS, ...(o.unembed ? [engine.LORA_HEAD_MODULE] : [])];
  const names = Array.from({ length: o.adapters }, (_, i) => `client-${i}`);
  for (const [i, name] of names.entries()) {
    model.addLora({ r: o.rank, alpha: engine.TINKER_LORA_ALPHA, targetModules: targets, seed: o.seed + i }, name);
    randomiseLoraB(model, rng, 0.01, name);
  }
  const adapterBytes = model.adapterInfo(names[0]).bytes;
  const prompts = randomRows(o.adapters, o.prompt, vocab, rng);
  const sampleOpts = { maxNewTokens: o.new, temperature: 1, seed: o.seed, stopTokenIds: [] };
  engine.sample(model, [prompts[0].slice(0, 4)], { ...sampleOpts, maxNewTokens: 2, adapter: names[0] }); // warm-up

  const sampling = {
    alone: () => timed(() => engine.sample(model, [prompts[0]], { ...sampleOpts, adapter: names[0] })),
    interleaved: () => timed(() => names.forEach((name, i) => engine.sample(model, [prompts[i]], { ...sampleOpts, adapter: name }))),
    batched: () => timed(() => engine.sample(model, prompts, { ...sampleOpts, adapter: names })),
    sameAdapterBatch: () => timed(() => engine.sample(model, prompts, { ...sampleOpts, adapter: names[0] })),
  };
  const sampleTimes = Object.fromEntries(Object.keys(sampling).map((k) => [k, []]));
  for (let r = 0; r < o.reps; r++) {
    const order = r % 2 === 0 ? Object.keys(sampling) : Object.keys(sampling).reverse();
    for (const k of order) sampleTimes[k].push(sampling[k]());
  }
  const tokens = { alone: o.new, interleaved: o.new * o.adapters, batched: o.new * o.adapters, sameAdapterBatch: o.new * o.adapters };
  const samplingOut = Object.fromEntries(Object.keys(sampling).map((k) => [k, { seconds: median(sampleTimes[k]), newTokensPerS: tokens[k] / median(sampleTimes[k]) }]));

  const trainers = names.map((name) => new engine.Trainer(model, { lr: 1e-4, maxGradNorm: 1, weightDecay: 0, adapter: name }));
  const rows = names.map(() => engine.padBatch(randomRows(1, o.seq, vocab, rng)));
  const ce = rows.map((b) => engine.crossEntropyCoefficients(b));
  trainers[0].trainStep(rows[0], ce[0]); // warm-up (and the optimizer's moments)
  for (let i = 1; i < trainers.length; i++) trainers[i].trainStep(rows[i], ce[i]);
  const training = {
    alone: () =>
      timed(() => {
        for (let s = 0; s < o.steps * o.adapters; s++) trainers[0].trainStep(rows[0], ce[0]);
      }),
    interleaved: () =>
      timed(() => {
        for (let s = 0; s < o.steps; s++) trainers.forEach((t, i) => t.trainStep(rows[i], ce[i]));
      }),
  };
  const trainTimes = { alone: [], interleaved: [] };
  for (let r = 0; r < o.reps; r++) {
    const order = r % 2 === 0 ? ['alone', 'interleaved'] : ['interleaved', 'alone'];
    for (const k of order) trainTimes[k].push(training[k]());
  }
  // What the unembedding LoRA costs: a step of an adapter on the layer linears only, alternating with client-0's.
  let unembedCost;
  if (o.unembed) {
    model.addLora({ r: o.rank, alpha: engine.TINKER_LORA_ALPHA, targetModules: engine.LORA_TARGETS.slice(), seed: o.seed }, 'layers-only');
    const layersOnly = new engine.Trainer(model, { lr: 1e-4, maxGradNorm: 1, weightDecay: 0, adapter: 'layers-only' });
    layersOnly.trainStep(rows[0], ce[0]);
    const t = { withUnembed: [], layersOnly: [] };
    for (let r = 0; r < 2 * o.reps; r++) {
      t.withUnembed.push(timed(() => trainers[0].trainStep(rows[0], ce[0])));
      t.layersOnly.push(timed(() => layersOnly.trainStep(rows[0], ce[0])));
    }
    const score = { withUnembed: [], layersOnly: [] };
    for (let r = 0; r < 2 * o.reps; r++) {
      score.withUnembed.push(timed(() => model.scoreTokens(rows[0], { adapter: names[0] })));
      score.layersOnly.push(timed(() => model.scoreTokens(rows[0], { adapter: 'layers-only' })));
    }
    unembedCost = {
      trainStepS: { withUnembed: median(t.withUnembed), layersOnly: median(t.layersOnly) },
      scoreS: { withUnembed: median(score.withUnembed), layersOnly: median(score.layersOnly) },
    };
    layersOnly.dispose();
  }
  const trainTokens = o.steps * o.adapters * o.seq;
  const trainingOut = Object.fromEntries(Object.keys(training).map((k) => [k, { seconds: median(trainTimes[k]), tokensPerS: trainTokens / median(trainTimes[k]) }]));
  clearInterval(watch);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  const out = {
    bench: 'multi-lora',
    date: new Date().toISOString(),
    model: o.model,
    shape: { layers: info.config.num_hidden_layers, hidden: info.config.hidden_size, vocab: info.config.vocab_size, storedDtype: info.storedDtype },
    backend: backend.name,
    matmul: backend.matmul,
    threads: o.threads,
    adapters: o.adapters,
    rank: o.rank,
    targets,
    prompt: o.prompt,
    newTokens: o.new,
    seq: o.seq,
    reps: o.reps,
    sampling: samplingOut,
    batchedOverInterleaved: samplingOut.batched.newTokensPerS / samplingOut.interleaved.newTokensPerS,
    training: trainingOut,
    interleavedOverAlone: trainingOut.interleaved.tokensPerS / trainingOut.alone.tokensPerS,
    ...(unembedCost ? { unembedCost } : {}),
    memory: {
      rssAfterLoadMiB: mib(rssBase),
      peakRssMiB: mib(peakRss),
      adapterFactorsMiB: mib(adapterBytes),
      adapterTrainingStateMiB: mib(engine.loraStateBytes(info.config, o.rank, targets).trainingBytes),
      heapPeakMiB: mib(engine.wasmHeapUsage().peakBytes),
    },
    loadStart,
    loadEnd: load(),
  };
  for (const t of trainers) t.dispose();
  model.dispose();
  const text = `${JSON.stringify(out, null, 2)}\n`;
  if (o.out) fs.writeFileSync(o.out, text);
  process.stdout.write(text);
}

main().catch((e) => {
  clearInterval(watch);
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
