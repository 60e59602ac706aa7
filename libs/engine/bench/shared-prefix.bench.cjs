#!/usr/bin/env node
'use strict';
/**
 * One GRPO group's update at a real model size, the rows trained whole against the rows trained after
 * their shared prompt (`Trainer.sharedPrefix`): `--samples` rows of a `--prompt`-token prompt and
 * `--response` tokens each, LoRA r8 on all linears of a random-weight bf16 checkpoint
 * (`make-checkpoint.cjs`), loss on the response tokens only (as the RL update). Both ways run in this
 * process, alternating, `--rounds` times; printed: seconds per group each way, the micro-batch rows each
 * chose, and the largest difference between their gradients (relative to each tensor's largest entry).
 *
 *   npm run build && node bench/shared-prefix.bench.cjs [--model qwen2.5-0.5b] [--prompt 230] [--response 128]
 *     [--samples 8] [--rounds 2] [--threads N] [--out file.json]
 */
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { checkpoint, randomiseLoraB } = require('./bench-process.cjs');
const engine = require(path.join(__dirname, '..', 'dist', 'index.js'));

function options(argv) {
  const o = { model: 'qwen2.5-0.5b', prompt: 230, response: 128, samples: 8, rounds: 2, threads: undefined, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--model') o.model = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else if (['--prompt', '--response', '--samples', '--rounds', '--threads'].includes(a)) o[a.slice(2)] = Number(argv[++i]);
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));

async function main() {
  const o = options(process.argv.slice(2));
  const dir = checkpoint(o.model);
  const backend = await engine.initBackend(o.threads ? { threads: o.threads } : {});
  const info = await engine.inspectHfModelDir(dir);
  const model = engine.Model.fromWeights(info.config, await engine.mapHfModelWeights(info), { trainable: false });
  model.addLora({ r: 8, alpha: 16, targetModules: engine.LORA_TARGETS.slice(), seed: 1 });
  const rng = new engine.Prng(2);
  randomiseLoraB(model, rng, 0.02);
  const vocab = Math.min(info.tokenizer.vocabSize, info.config.vocab_size);
  const prompt = Array.from({ length: o.prompt }, () => Math.floor(rng.uniform() * vocab));
  const responses = Array.from({ length: o.samples }, () => Array.from({ length: o.response }, () => Math.floor(rng.uniform() * vocab)));
  const coefOn = (batch, from) => {
    const c = new Float32Array(batch.ids.length);
    batch.scored = Uint8Array.from(c, (_, i) => (i % batch.seqLen >= from && batch.mask[i] ? 1 : 0));
    batch.scored.forEach((s, i) => (c[i] = s ? -1 / (o.samples * o.response) : 0));
    return { logProbCoef: c };
  };
  const grads = (trainer) => new Map([...trainer.accumulated].map(([k, g]) => [k, Float32Array.from(g.dataSync())]));

  const whole = () => {
    const trainer = new engine.Trainer(model, { lr: 0 });
    const rows = responses.map((r) => [...prompt, ...r]);
    const micro = Math.max(1, trainer.microBatchRows(o.prompt + o.response, rows.length));
    const t0 = performance.now();
    for (let i = 0; i < rows.length; i += micro) {
      const batch = engine.padBatch(rows.slice(i, i + micro));
      trainer.accumulate(batch, coefOn(batch, o.prompt));
    }
    const s = (performance.now() - t0) / 1000;
    const g = grads(trainer);
    trainer.dispose();
    return { s, micro, g };
  };
  const shared = () => {
    const trainer = new engine.Trainer(model, { lr: 0 });
    const t0 = performance.now();
    const group = trainer.sharedPrefix(prompt.slice(0, -1));
    const rows = responses.map((r) => [prompt.at(-1), ...r]);
    const micro = Math.max(1, group.microBatchRows(1 + o.response, rows.length));
    for (let i = 0; i < rows.length; i += micro) {
      const batch = engine.padBatch(rows.slice(i, i + micro));
      group.accumulate(batch, coefOn(batch, 1));
    }
    group.finish();
    const s = (performance.now() - t0) / 1000;
    const g = grads(trainer);
    trainer.dispose();
    return { s, micro, g };
  };

  const loadStart = load();
  const rounds = [];
  let diff = 0;
  for (let r = 0; r < o.rounds; r++) {
    const order = r % 2 === 0 ? [whole, shared] : [shared, whole];
    const res = {};
    for (const f of order) res[f === whole ? 'whole' : 'shared'] = f();
    for (const [k, g] of res.whole.g) {
      const h = res.shared.g.get(k);
      let scale = 1e-12;
      let d = 0;
      for (let i = 0; i < g.length; i++) {
        scale = Math.max(scale, Math.abs(g[i]));
        d = Math.max(d, Math.abs(g[i] - h[i]));
      }
      diff = Math.max(diff, d / scale);
    }
    rounds.push({ first: order[0] === whole ? 'whole' : 'shared', wholeS: res.whole.s, sharedS: res.shared.s, wholeMicro: res.whole.micro, sharedMicro: res.shared.micro });
    process.stderr.write(
      `round ${r + 1}: whole ${res.whole.s.toFixed(1)} s (${res.whole.micro} rows a pass), shared ${res.shared.s.toFixed(1)} s (${res.shared.micro} rows a pass)\n`,
    );
  }
  const out = {
    bench: 'shared-prefix',
    at: new Date().toISOString(),
    model: o.model,
    threads: backend.native?.threads,
    group: { prompt: o.prompt, response: o.response, samples: o.samples },
    rounds,
    maxRelativeGradDiff: diff,
    speedup: rounds.map((r) => Number((r.wholeS / r.sharedS).toFixed(3))),
    loadStart,
    loadEnd: load(),
  };
  process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
  if (o.out) fs.writeFileSync(o.out, `${JSON.stringify(out, null, 1)}\n`);
  model.dispose();
}

main().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
