#!/usr/bin/env node
'use strict';
/**
 * Does the engine train like PyTorch bf16? The same LoRA adapter (made by the engine, saved as a PEFT
 * folder and loaded by PEFT), the same random-weight bf16 checkpoint and the same token rows, trained for
 * --steps steps by the engine and by transformers + PEFT on PyTorch in bf16 (peer_hf.py --mode loss, in
 * the virtualenv of install-peer.sh), the same loss (mean next-token cross-entropy), clipping (1.0) and
 * AdamW (lr --lr, weight decay 0.01); prints both loss curves and the largest relative difference per
 * step, and exits 1 when it misses the tolerance (default 1e-3 relative: PyTorch runs the base in bf16 with bf16
 * activations, the engine in float32 with the bf16 weights widened, so they agree to bf16's precision,
 * not float32's; measured 1.9e-4 over the default 8 steps of a 4-layer model).
 *
 *   node libs/engine/bench/check-training-vs-peer.cjs [--layers 4] [--rows 2] [--seq 64] [--steps 8] [--lr 1e-3] [--tolerance 1e-3]
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const engine = require(path.join(__dirname, '..', 'dist', 'index.js'));
const { randomiseLoraB } = require('./bench-process.cjs');

function parseArgs(argv) {
  const o = { layers: 4, rows: 2, seq: 64, steps: 8, lr: 1e-3, tolerance: 1e-3, seed: 7 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`);
    o[key] = Number(argv[i + 1]);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'check-training-'));
  const ckpt = path.join(work, 'model');
  const made = spawnSync(process.execPath, [path.join(__dirname, 'make-checkpoint.cjs'), '--shape', 'qwen2.5-0.5b', '--out', ckpt, '--layers', String(o.layers)], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (made.status !== 0) throw new Error('make-checkpoint failed');
  await engine.initBackend({ threads: 2 });
  const info = await engine.inspectHfModelDir(ckpt);
  const model = engine.Model.fromWeights(info.config, await engine.mapHfModelWeights(info), { trainable: false });
  model.addLora({ r: 8, alpha: 16, targetModules: engine.LORA_TARGETS.slice(), seed: o.seed });
  // B normal(0, 0.02) as the benches do, so both factors move from the first step.
  const rng = new engine.Prng(o.seed + 1);
  randomiseLoraB(model, rng, 0.02);
  const adapterDir = path.join(work, 'adapter');
  await engine.saveLoraAdapter(adapterDir, model.exportLora(ckpt), { modelConfig: info.config, dtype: 'F32' });
  const vocab = Math.min(info.tokenizer.vocabSize, info.config.vocab_size);
  const ids = Array.from({ length: o.rows }, () => Array.from({ length: o.seq }, () => Math.floor(rng.uniform() * vocab)));
  const idsFile = path.join(work, 'ids.json');
  fs.writeFileSync(idsFile, JSON.stringify(ids));

  const trainer = new engine.Trainer(model, { lr: o.lr, maxGradNorm: 1, weightDecay: 0.01 });
  const batch = engine.padBatch(ids);
  const ours = [];
  for (let s = 0; s < o.steps; s++) ours.push(trainer.trainStep(batch, engine.crossEntropyCoefficients(batch)).loss);
  trainer.dispose();
  model.dispose();

  const python = path.join(__dirname, '.venv-peer', 'bin', 'python');
  const peer = spawnSync(
    python,
    [path.join(__dirname, 'peer_hf.py'), '--model', ckpt, '--mode', 'loss', '--adapter', adapterDir, '--ids', idsFile, '--steps', String(o.steps), '--lr', String(o.lr)],
    { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '2' } },
  );
  const line = (peer.stdout || '').trim().split('\n').pop();
  if (peer.status !== 0 || !line) throw new Error(`peer_hf.py failed (run install-peer.sh first): ${(peer.stderr || '').trim().split('\n').slice(-3).join(' | ')}`);
  const theirs = JSON.parse(line).losses.map((l) => l.loss);
  const rel = ours.map((l, i) => Math.abs(l - theirs[i]) / Math.abs(theirs[i]));
  const worst = Math.max(...rel);
  const result = { layers: o.layers, rows: o.rows, seq: o.seq, lr: o.lr, engine: ours, peer: theirs, relDiff: rel, worst, tolerance: o.tolerance, pass: worst <= o.tolerance };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  fs.rmSync(work, { recursive: true, force: true });
  process.exitCode = result.pass ? 0 : 1;
}

main().catch((e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exitCode = 2;
});
