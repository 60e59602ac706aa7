'use strict';
/**
 * What the real-size benchmarks (real-models.bench.js, vs-peer.bench.js) share: the random-weight
 * checkpoints they measure on, one measurement per process read back as the last JSON line it prints,
 * and the median over rounds.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** Where checkpoints are made and kept across runs (delete it to free up to 24 GB). */
const CHECKPOINTS = path.join(os.tmpdir(), 'opentinker-real-models');

/** The folder of a make-checkpoint.cjs checkpoint of `shape` (2 layers with `quick`), made on first use. */
function checkpoint(shape, quick = false) {
  const dir = path.join(CHECKPOINTS, quick ? `${shape}-2layers` : shape);
  if (!fs.existsSync(path.join(dir, 'config.json'))) {
    const r = spawnSync(process.execPath, [path.join(__dirname, 'make-checkpoint.cjs'), '--shape', shape, '--out', dir, ...(quick ? ['--layers', '2'] : [])], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`make-checkpoint ${shape} failed`);
  }
  return dir;
}

/** Runs one side's process (2 OpenMP threads, passive waits) and parses the last line it prints; `error` when there is none. */
function runSide(command, args, env = {}) {
  const t0 = Date.now();
  const r = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, OMP_NUM_THREADS: '2', OMP_WAIT_POLICY: 'PASSIVE', ...env } });
  const last = (r.stdout || '').trim().split('\n').pop();
  let result;
  try {
    result = JSON.parse(last);
  } catch {
    result = { error: `no JSON (exit ${r.status}): ${(r.stderr || '').trim().split('\n').slice(-3).join(' | ')}` };
  }
  return { ...result, wallS: (Date.now() - t0) / 1000 };
}

/** The median of the values present (the lower middle of an even count), or null. */
function median(xs) {
  const s = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
}

/**
 * Draws every LoRA B factor of `adapter` (default: the model's default adapter) from normal(0, std) with
 * `rng`, as the PyTorch peer does: PEFT starts B at 0, and a bench of a few steps would give A no gradient.
 */
function randomiseLoraB(model, rng, std, adapter) {
  const tf = require(require.resolve('@tensorflow/tfjs-core', { paths: [path.join(__dirname, '..')] }));
  for (const [name, v] of model.namedVariables(adapter)) {
    if (!name.includes('lora_B')) continue;
    tf.tidy(() =>
      v.assign(
        tf.tensor(
          Float32Array.from({ length: v.size }, () => rng.normal() * std),
          v.shape,
        ),
      ),
    );
  }
}

module.exports = { CHECKPOINTS, checkpoint, runSide, median, randomiseLoraB };
