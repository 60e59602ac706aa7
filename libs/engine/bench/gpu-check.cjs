#!/usr/bin/env node
'use strict';
/**
 * The engine's correctness checks on a machine with an NVIDIA GPU (run by gpu-check.sh): with every
 * product sent to the GPU (cudaMinWork 1), the reference transformer cases of src/__golden__ (logits and
 * per-token log-probs of two tiny models, checked against a float64 NumPy implementation on CPU at 1e-4)
 * must hold at the same tolerance, and a bf16 weight product on the GPU must equal the CPU's to float32
 * rounding. Prints one JSON line; exit status 1 when a check fails, 2 when CUDA did not open.
 *
 *   CUDA_VISIBLE_DEVICES=0 node libs/engine/bench/gpu-check.cjs [--golden PATH]
 *   node libs/engine/bench/gpu-check.cjs --cpu   (the same checks on the CPU: the script's own test)
 */
const fs = require('node:fs');
const path = require('node:path');

const engine = require(path.join(__dirname, '..', 'dist', 'index.js'));
const { engineAddon } = require(path.join(__dirname, '..', 'dist', 'native', 'addon.js'));

const golden = (() => {
  const i = process.argv.indexOf('--golden');
  return i > 0 ? process.argv[i + 1] : path.join(__dirname, '..', 'src', '__golden__', 'transformer.json');
})();

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function main() {
  const cpu = process.argv.includes('--cpu');
  const info = await engine.initBackend({ backend: 'wasm', device: cpu ? 'cpu' : 'cuda' }).catch((e) => ({ error: e.message }));
  if (info.error) {
    process.stdout.write(`${JSON.stringify({ check: 'gpu', ok: false, error: info.error })}\n`);
    process.exit(2);
  }
  const addon = engineAddon();
  addon.cudaMinWork(1);
  const out = cpu
    ? { check: 'gpu', device: 'cpu (--cpu)', kernel: info.native.kernel, cases: [] }
    : { check: 'gpu', device: info.cuda.name, totalMib: Math.round(info.cuda.totalBytes / 2 ** 20), kernel: info.native.kernel, cases: [] };
  let ok = true;

  // The reference cases, with frozen (native, on-device) weights.
  for (const c of JSON.parse(fs.readFileSync(golden, 'utf8')).cases) {
    const weights = new Map(Object.entries(c.weights).map(([k, v]) => [k, { shape: v.shape, data: Float32Array.from(v.data) }]));
    const model = engine.Model.fromWeights(engine.validateModelConfig(c.config), weights, { trainable: false });
    const batch = { batchSize: c.batchSize, seqLen: c.seqLen, ids: Int32Array.from(c.ids), mask: Uint8Array.from(c.mask) };
    const s = model.scoreTokens(batch);
    const lp = maxAbsDiff(s.logProbs, c.logProbs);
    const ent = maxAbsDiff(s.entropy, c.entropy);
    const pass = lp < 1e-4 && ent < 1e-4 && (cpu || engine.nativeMemory().deviceBytes > 0);
    ok &&= pass;
    out.cases.push({ name: c.name, logProbMaxDiff: lp, entropyMaxDiff: ent, pass });
    model.dispose();
  }

  // A bf16 weight product, on the GPU and on the CPU.
  const [m, n, k] = [257, 4864, 896];
  const rng = new engine.Prng(3);
  const a = Float32Array.from({ length: m * k }, () => rng.normal());
  const bits = engine.encodeBfloat16(Float32Array.from({ length: n * k }, () => rng.normal() * 0.02));
  const onGpu = engine.NativeTensor.fromFloat32(engine.decodeBfloat16(bits), [n, k], 'BF16');
  const onCpu = engine.NativeTensor.fromFloat32(engine.decodeBfloat16(bits), [n, k], 'BF16');
  if (!cpu) onGpu.toDevice();
  const c1 = new Float32Array(m * n);
  const c2 = new Float32Array(m * n);
  addon.gemm(false, true, 1, m, n, k, a, 0, onGpu.handle, 0, c1);
  addon.gemm(false, true, 1, m, n, k, a, 0, onCpu.handle, 0, c2);
  const diff = maxAbsDiff(c1, c2);
  const scale = c2.reduce((s, x) => Math.max(s, Math.abs(x)), 0);
  const pass = diff / scale < 1e-5;
  ok &&= pass;
  out.gemm = { m, n, k, maxDiff: diff, relative: diff / scale, pass };
  out.ok = ok;
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(ok ? 0 : 1);
}

main();
