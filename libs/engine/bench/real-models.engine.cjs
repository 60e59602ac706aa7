#!/usr/bin/env node
'use strict';
/**
 * The engine's side of the real-size benchmark (real-models.bench.js runs it beside
 * torch_real_models.py): a Hugging Face folder of a Qwen2.5 shape, loaded as the service loads it
 * (frozen base memory-mapped outside the wasm heap in its stored dtype; LoRA factors, activations and
 * AdamW state in the heap), then one measurement per process, printed as one JSON line with the peak RSS,
 * the wasm heap's peak, the native bytes and the machine's load at start and end.
 *
 *   node libs/engine/bench/real-models.engine.cjs --model DIR --mode load|sample|lora|full|logits [options]
 *   sample: --batch B --prompt P --new N [--temperature T] [--reps R] [--tfjs-decode 1]   (KV cache; one prefill, N-1 decode passes;
           --tfjs-decode 1 runs the TensorFlow.js decoding step instead of the native one)
 *   lora:   --batch B --seq T [--micro M] [--rank 8] [--alpha 16] [--steps S] [--warmup W]
 *           (all seven linears of every layer; mean next-token cross-entropy over every position; clip 1.0;
 *           AdamW lr 1e-4 — as torch_real_models.py; the engine cuts micro-batches to its heap itself
 *           when --micro is not given)
 *   full:   --batch B --seq T (full fine-tuning: reports the engine's refusal when it cannot fit)
 *   logits: --ids FILE.json --out FILE.json [--last-only]
 *   limits: (no --model) memory bandwidth and peak FLOP/s measured on the engine's threads [--seconds S per FLOP/s loop, 0.5]
 *   --threads N (default 2)
 * Needs a built engine (npx tsc -b libs/engine/tsconfig.json, and its addon: node libs/engine/native/build.js).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const engine = require(path.join(__dirname, '..', 'dist', 'index.js'));
const { randomiseLoraB } = require('./bench-process.cjs');

function parseArgs(argv) {
  const o = { threads: 2, temperature: 1, reps: 3, rank: 8, alpha: 16, steps: 2, warmup: 1, seed: 7 };
  const numeric = new Set(['batch', 'prompt', 'new', 'temperature', 'reps', 'seq', 'micro', 'rank', 'alpha', 'steps', 'warmup', 'threads', 'seed', 'tfjsDecode', 'seconds']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (key === 'lastOnly') {
      o.lastOnly = true;
      continue;
    }
    const v = argv[++i];
    o[key] = numeric.has(key) ? Number(v) : v;
  }
  if (!o.mode || (!o.model && o.mode !== 'limits')) throw new Error('--model and --mode are required');
  return o;
}

const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));
const mib = (b) => Math.round(b / 1024 / 1024);

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Random token rows below the folder's tokenizer (ids that decode), seeded. */
function randomRows(rows, len, vocab, seed) {
  const rng = new engine.Prng(seed);
  return Array.from({ length: rows }, () => Array.from({ length: len }, () => Math.floor(rng.uniform() * vocab)));
}

/** The native decoding profile as seconds per step and stage, or null when no native step ran. */
function decodeProfile(p) {
  if (!p.steps) return null;
  const { steps, rowSteps, ...stages } = p;
  return { steps, rowSteps, perStepMs: Object.fromEntries(Object.entries(stages).map(([k, s]) => [k, Number(((s * 1000) / steps).toFixed(3))])) };
}

async function openModel(dir, trainable) {
  const t0 = performance.now();
  const info = await engine.inspectHfModelDir(dir);
  const model = trainable
    ? engine.Model.fromWeights(info.config, (await engine.loadHfModelDir(dir)).weights, { trainable: true })
    : engine.Model.fromWeights(info.config, await engine.mapHfModelWeights(info), { trainable: false });
  return { model, info, loadS: (performance.now() - t0) / 1000 };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const loadStart = load();
  const backend = await engine.initBackend({ threads: o.threads });
  if (o.tfjsDecode) engine.setNativeDecoding(false);
  const out = { side: 'engine', mode: o.mode, model: o.model, threads: o.threads, backend: backend.name, matmul: backend.matmul, native: backend.native, cuda: backend.cuda };

  if (o.mode === 'limits') {
    process.stdout.write(`${JSON.stringify({ ...out, limits: engine.measureMachineLimits(1 << 30, o.seconds ?? 0.5), loadStart, loadEnd: load() })}\n`);
    return;
  }
  if (o.mode === 'full') {
    const info = await engine.inspectHfModelDir(o.model);
    const refusal = engine.fullFineTuningRefusal(info.config, engine.wasmHeapUsage().budgetBytes);
    if (refusal) Object.assign(out, { error: refusal, parameters: engine.countParameters(info.config) });
  }
  if (!out.error) {
    const { model, info, loadS } = await openModel(o.model, o.mode === 'full');
    const vocab = Math.min(info.tokenizer.vocabSize, info.config.vocab_size);
    Object.assign(out, { parameters: engine.countParameters(info.config), storedDtype: info.storedDtype, loadS, weights: model.weightBytes() });
    if (o.mode === 'sample') {
      const prompts = randomRows(o.batch, o.prompt, vocab, o.seed);
      const run = () => {
        const t0 = performance.now();
        engine.sample(model, prompts, { maxNewTokens: o.new, temperature: o.temperature, seed: o.seed, stopTokenIds: [] });
        return (performance.now() - t0) / 1000;
      };
      engine.sample(
        model,
        prompts.map((p) => p.slice(0, 8)),
        { maxNewTokens: 2, stopTokenIds: [] },
      ); // warm-up
      // Prefill alone, to split the time (a 1-token generation is one prefill pass).
      const prefills = [];
      const totals = [];
      for (let r = 0; r < o.reps; r++) {
        const t0 = performance.now();
        engine.sample(model, prompts, { maxNewTokens: 1, temperature: o.temperature, seed: o.seed, stopTokenIds: [] });
        prefills.push((performance.now() - t0) / 1000);
        totals.push(run());
      }
      const total = median(totals);
      const prefill = median(prefills);
      Object.assign(out, {
        batch: o.batch,
        prompt: o.prompt,
        new: o.new,
        totalS: total,
        prefillS: prefill,
        newTokensPerS: (o.batch * o.new) / total,
        decodeTokensPerS: (o.batch * (o.new - 1)) / Math.max(1e-9, total - prefill),
        // Seconds per decode step by stage (native decoding; empty when the TensorFlow.js step ran).
        decodeProfile: decodeProfile(engine.nativeDecodeProfile()),
      });
    } else if (o.mode === 'lora' || o.mode === 'full') {
      if (o.mode === 'lora') model.addLora({ r: o.rank, alpha: o.alpha, targetModules: engine.LORA_TARGETS.slice(), seed: o.seed });
      if (o.mode === 'lora') randomiseLoraB(model, new engine.Prng(o.seed + 1), 0.02);
      const trainer = new engine.Trainer(model, { lr: 1e-4, maxGradNorm: 1, weightDecay: 0.01 });
      const rows = randomRows(o.batch, o.seq, vocab, o.seed);
      const micro = o.micro ?? o.batch;
      const steps = [];
      let last;
      for (let s = 0; s < o.warmup + o.steps; s++) {
        const t0 = performance.now();
        let recomputed = false;
        for (let i = 0; i < o.batch; i += micro) {
          const batch = engine.padBatch(rows.slice(i, i + micro));
          // Each micro-batch's mean loss weighted by its share of the rows, as the peer does.
          const coefs = engine.crossEntropyCoefficients(batch);
          const share = batch.batchSize / o.batch;
          const r = trainer.accumulate(batch, { logProbCoef: Float32Array.from(coefs.logProbCoef, (c) => c * share) });
          recomputed ||= r.recomputed;
        }
        last = { ...trainer.step(), recomputed };
        if (s >= o.warmup) steps.push((performance.now() - t0) / 1000);
      }
      const stepS = median(steps);
      Object.assign(out, {
        batch: o.batch,
        seq: o.seq,
        micro,
        steps: steps.length,
        stepS,
        tokensPerS: (o.batch * o.seq) / stepS,
        gradNorm: last.gradNorm,
        recomputed: last.recomputed,
        trainable: [...model.namedVariables().values()].reduce((n, v) => n + v.size, 0),
      });
    } else if (o.mode === 'logits') {
      const ids = JSON.parse(fs.readFileSync(o.ids, 'utf8'));
      const rowsIds = Array.isArray(ids) ? ids : ids.ids;
      const tf = require(require.resolve('@tensorflow/tfjs-core', { paths: [path.join(__dirname, '..')] }));
      const batch = engine.padBatch(rowsIds);
      const logits = tf.tidy(() => model.logits(batch).dataSync());
      const v = info.config.vocab_size;
      const t = batch.seqLen;
      const rowsOut = rowsIds.map((_, b) =>
        o.lastOnly
          ? [Array.from(logits.subarray((b * t + t - 1) * v, (b * t + t) * v))]
          : Array.from({ length: t }, (_, p) => Array.from(logits.subarray((b * t + p) * v, (b * t + p + 1) * v))),
      );
      fs.writeFileSync(o.out, JSON.stringify({ shape: [rowsIds.length, o.lastOnly ? 1 : t, v], logits: rowsOut }));
      Object.assign(out, { rows: rowsIds.length, seqLen: t });
    }
    model.dispose();
  }
  const heap = engine.wasmHeapUsage();
  Object.assign(out, {
    peakRssMib: mib(process.resourceUsage().maxRSS * 1024),
    heapPeakMib: mib(heap.peakBytes),
    heapMib: mib(heap.heapBytes),
    nativeMib: engine.nativeMemory(),
    loadStart,
    loadEnd: load(),
  });
  out.nativeMib = Object.fromEntries(Object.entries(out.nativeMib).map(([k, b]) => [k, mib(b)]));
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((e) => {
  process.stdout.write(`${JSON.stringify({ side: 'engine', error: e.message, code: e.code })}\n`);
  process.exitCode = 1;
});
