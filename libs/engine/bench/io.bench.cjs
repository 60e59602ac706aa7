#!/usr/bin/env node
'use strict';
/**
 * I/O benchmark of @opentinker/engine: safetensors write/read throughput per dtype, a full save/load of
 * a Hugging Face folder, and byte-level BPE tokenizer throughput. Prints numbers; asserts nothing.
 *
 * Run after building the package:  (cd libs/engine && npx tsc -b tsconfig.json) && node libs/engine/bench/io.bench.cjs [millions of parameters, default 100]
 */
const { mkdtempSync, rmSync, readFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const eng = require('../dist/index.js');

const millions = Number(process.argv[2] ?? 100);
const tmp = mkdtempSync(join(tmpdir(), 'engine-io-bench-'));
const mb = (bytes) => bytes / 2 ** 20;
const rss = () => `${mb(process.memoryUsage().rss).toFixed(0)} MiB RSS`;

async function timed(label, bytes, fn, items) {
  const t0 = process.hrtime.bigint();
  const out = await fn();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const rate = items === undefined ? `${(mb(bytes) / s).toFixed(0).padStart(6)} MiB/s` : `${((s / items) * 1e6).toFixed(2).padStart(6)} µs/token`;
  console.log(`${label.padEnd(48)} ${s.toFixed(2).padStart(7)} s  ${rate}  (${rss()})`);
  return out;
}

(async () => {
  try {
    // One tensor set of `millions` parameters, in 16 tensors like a model's layers.
    const per = Math.floor((millions * 1e6) / 16);
    const tensors = [];
    for (let i = 0; i < 16; i++) {
      const data = new Float32Array(per);
      for (let j = 0; j < per; j++) data[j] = Math.sin(j * 0.001 + i);
      tensors.push([`layer.${i}.weight`, { shape: [per], data }]);
    }
    const f32Bytes = per * 16 * 4;
    console.log(`safetensors, ${((per * 16) / 1e6).toFixed(0)}M parameters (${mb(f32Bytes).toFixed(0)} MiB as F32)`);
    for (const dtype of ['F32', 'BF16', 'F16']) {
      const path = join(tmp, `w-${dtype}.safetensors`);
      const bytes = dtype === 'F32' ? f32Bytes : f32Bytes / 2;
      await timed(`  write ${dtype}`, bytes, () => eng.writeSafetensors(path, tensors, { dtype }));
      await timed(`  read ${dtype} -> float32`, bytes, () => eng.readSafetensors(path));
      rmSync(path);
    }

    const config = { ...eng.modelPreset('bench-b'), vocab_size: 4096 };
    const weights = eng.initWeights(config, 1);
    const params = eng.countParameters(config);
    const dir = join(tmp, 'model');
    console.log(`Hugging Face folder, bench-b with vocab 4096 (${(params / 1e6).toFixed(1)}M parameters)`);
    await timed('  saveHfModelDir BF16, 4 MB shards', params * 2, () =>
      eng.saveHfModelDir(dir, { config, weights, tokenizer: new eng.ByteTokenizer() }, { dtype: 'BF16', maxShardBytes: 4e6 }),
    );
    await timed('  loadHfModelDir', params * 2, () => eng.loadHfModelDir(dir, { allowExtraWeights: false }).catch((e) => console.log('   ', e.message)));

    const text = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8').repeat(5);
    const byte = new eng.ByteTokenizer();
    const fixture = join(__dirname, '..', 'src', '__golden__', 'tokenizer');
    const bpe = eng.HfTokenizer.fromJson(
      JSON.parse(readFileSync(join(fixture, 'tokenizer.json'), 'utf8')),
      JSON.parse(readFileSync(join(fixture, 'qwen2.5-tokenizer_config.json'), 'utf8')),
    );
    for (const [name, tok] of [
      ['ByteTokenizer', byte],
      ['HfTokenizer (tiny BPE fixture)', bpe],
    ]) {
      const ids = tok.encode(text);
      await timed(`  ${name} encode (${ids.length} tokens)`, 0, () => tok.encode(text), ids.length);
      await timed(`  ${name} decode`, 0, () => tok.decode(ids), ids.length);
      const scanner = new eng.StopStringScanner(tok, ['\u0000never']);
      await timed(`  ${name} stop-string scan, one token at a time`, 0, () => ids.forEach((id) => scanner.push(id)), ids.length);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
})();
