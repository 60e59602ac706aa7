#!/usr/bin/env node
'use strict';
/**
 * Random-weight checkpoints of real architectures (Qwen2.5 0.5B / 1.5B / 3B / 7B shapes), written as a
 * Hugging Face model folder exactly as `transformers` `save_pretrained` lays it out, for benchmarks of
 * the engine and of its PyTorch peer (bench/torch_real_models.py) at real sizes. Node only, no Python,
 * and no engine build needed.
 *
 *   node libs/engine/bench/make-checkpoint.cjs --shape qwen2.5-0.5b --out /tmp/qwen2.5-0.5b-random
 *   options: --shape qwen2.5-0.5b|qwen2.5-1.5b|qwen2.5-3b|qwen2.5-7b (required)  --out DIR (required;
 *            never inside the repository)  --dtype bf16|f32 (default bf16)  --seed N (default 1)
 *            --layers N (cut the layer count, for quick tests)  --max-shard-bytes N (default 5e9, as
 *            transformers' "5GB"; smaller to exercise the sharded layout)  --check (then read the folder
 *            back with the built engine's inspectHfModelDir, from libs/engine/dist)
 *
 * What it writes into DIR:
 *   config.json             the published Qwen2.5 base config (model_type qwen2, Qwen2ForCausalLM, vocab,
 *                           sizes, heads, rope_theta 1e6, rms_norm_eps 1e-6, max_position_embeddings
 *                           32768, tie_word_embeddings true except 7B, bos/eos 151643), torch_dtype
 *                           "bfloat16" ("float32" with --dtype f32), num_hidden_layers cut by --layers
 *   generation_config.json  Qwen2.5 base's (bos/eos 151643, do_sample false, max_new_tokens 2048)
 *   model.safetensors       when the weights fit one 5 GB shard (0.5B, 1.5B), else
 *   model-0000i-of-0000N.safetensors + model.safetensors.index.json (metadata.total_size, sorted weight_map)
 *   tokenizer.json, tokenizer_config.json
 *                           copied from src/__golden__/safetensors/tiny-qwen2 (a small byte-level BPE of
 *                           307 ids with <|endoftext|> 304, <|im_start|> 305, <|im_end|> 306 and Qwen's
 *                           ChatML chat_template; a ChatML template is added if it lacks one). Its vocab is
 *                           smaller than vocab_size, which the engine accepts; random token ids for
 *                           benchmarks should stay below 307 when they must decode.
 *
 * Weights: the names, order and shapes of the engine's weightSpecs (src/model/weights.ts), Hugging Face
 * names, q/k/v biases (qwen2), lm_head.weight only when untied. Values: normal(0, 0.02) for the
 * embedding, linear weights and biases, ones for RMSNorm weights. Each tensor has its own generator
 * (xorshift128, seeded by splitmix64 from --seed and the tensor's name), so a tensor's values do not
 * depend on the sharding, the chunk size, or --layers (layer 0 of a --layers 2 folder is layer 0 of the
 * full model). Normals are drawn by inverse-CDF lookup: each 16-bit random index picks one of 65,536
 * equal-probability quantiles of N(0, 0.02) (precomputed, as bf16 bit patterns or f32), so a bf16 value
 * costs one table load; the tails are cut at about 4.3 sigma, which no benchmark cares about.
 *
 * Memory: tensors are generated straight into two 8 MiB buffers that alternate (one fills while the
 * other is written), so the process stays near 100 MiB whatever the model; no float32 copy of any
 * tensor and no whole shard are ever held. Safetensors layout as the engine's writer (src/io/safetensors.ts):
 * 8-byte little-endian header length, JSON header ({"__metadata__": {...}, then tensors in file order
 * with contiguous data_offsets}) padded with spaces to a multiple of 8, then the raw little-endian data.
 *
 * Prints progress to stderr and one JSON line on stdout: { shape, dir, dtype, params, files, bytes,
 * seconds, mibPerS }.
 */
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..', '..');
const GOLDEN_TOKENIZER_DIR = path.join(__dirname, '..', 'src', '__golden__', 'safetensors', 'tiny-qwen2');
const DEFAULT_MAX_SHARD_BYTES = 5_000_000_000; // transformers' "5GB"
const CHUNK_BYTES = 8 << 20;
const STD = 0.02;

// Published Qwen2.5 base configs (Hugging Face Qwen/Qwen2.5-*/config.json); max_position_embeddings 32768 for all.
const SHAPES = {
  'qwen2.5-0.5b': {
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-1.5b': {
    vocab_size: 151936,
    hidden_size: 1536,
    intermediate_size: 8960,
    num_hidden_layers: 28,
    num_attention_heads: 12,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-3b': {
    vocab_size: 151936,
    hidden_size: 2048,
    intermediate_size: 11008,
    num_hidden_layers: 36,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-7b': {
    vocab_size: 152064,
    hidden_size: 3584,
    intermediate_size: 18944,
    num_hidden_layers: 28,
    num_attention_heads: 28,
    num_key_value_heads: 4,
    tie_word_embeddings: false,
  },
};

// Qwen's ChatML template (Qwen2.5 Instruct's, without tools), added only when the copied tokenizer_config lacks one.
const CHATML_TEMPLATE =
  "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}" +
  "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}" +
  "{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}" +
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

function usage(msg) {
  if (msg) process.stderr.write(`make-checkpoint: ${msg}\n`);
  process.stderr.write(
    'usage: node libs/engine/bench/make-checkpoint.cjs --shape ' +
      Object.keys(SHAPES).join('|') +
      ' --out DIR [--dtype bf16|f32] [--seed N] [--layers N] [--max-shard-bytes N] [--check]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = { shape: undefined, out: undefined, dtype: 'bf16', seed: 1, layers: undefined, maxShardBytes: DEFAULT_MAX_SHARD_BYTES, check: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    const int = (min) => {
      const v = Number(val());
      if (!Number.isSafeInteger(v) || v < min) usage(`${a} needs an integer >= ${min}`);
      return v;
    };
    if (a === '--shape') o.shape = val();
    else if (a === '--out') o.out = val();
    else if (a === '--dtype') o.dtype = val();
    else if (a === '--seed') o.seed = int(0);
    else if (a === '--layers') o.layers = int(1);
    else if (a === '--max-shard-bytes') o.maxShardBytes = int(1);
    else if (a === '--check') o.check = true;
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown option ${a}`);
  }
  if (!o.shape || !SHAPES[o.shape]) usage(`--shape must be one of ${Object.keys(SHAPES).join(', ')}`);
  if (!o.out) usage('--out DIR is required');
  if (o.dtype !== 'bf16' && o.dtype !== 'f32') usage('--dtype must be bf16 or f32');
  o.out = path.resolve(o.out);
  const rel = path.relative(REPO, o.out);
  if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) usage(`--out ${o.out} is inside the repository ${REPO}; write checkpoints under /tmp or elsewhere`);
  return o;
}

function hfConfig(shapeName, dtype, layers) {
  const s = SHAPES[shapeName];
  const L = layers ?? s.num_hidden_layers;
  // Keys in the (sorted) order transformers writes them.
  return {
    architectures: ['Qwen2ForCausalLM'],
    attention_dropout: 0.0,
    bos_token_id: 151643,
    eos_token_id: 151643,
    hidden_act: 'silu',
    hidden_size: s.hidden_size,
    initializer_range: 0.02,
    intermediate_size: s.intermediate_size,
    max_position_embeddings: 32768,
    max_window_layers: L,
    model_type: 'qwen2',
    num_attention_heads: s.num_attention_heads,
    num_hidden_layers: L,
    num_key_value_heads: s.num_key_value_heads,
    rms_norm_eps: 1e-6,
    rope_scaling: null,
    rope_theta: 1000000.0,
    sliding_window: 32768,
    tie_word_embeddings: s.tie_word_embeddings,
    torch_dtype: dtype === 'bf16' ? 'bfloat16' : 'float32',
    transformers_version: '4.43.1',
    use_cache: true,
    use_sliding_window: false,
    vocab_size: s.vocab_size,
  };
}

/** The engine's weightSpecs (src/model/weights.ts) for a qwen2 config: HF names and order, q/k/v biases. */
function weightSpecs(c) {
  const d = c.hidden_size;
  const hd = d / c.num_attention_heads;
  const q = c.num_attention_heads * hd;
  const kv = c.num_key_value_heads * hd;
  const ff = c.intermediate_size;
  const specs = [{ name: 'model.embed_tokens.weight', shape: [c.vocab_size, d], kind: 'embedding' }];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const l = (s) => `model.layers.${i}.${s}`;
    specs.push({ name: l('input_layernorm.weight'), shape: [d], kind: 'norm' });
    specs.push({ name: l('self_attn.q_proj.weight'), shape: [q, d], kind: 'linear' });
    specs.push({ name: l('self_attn.q_proj.bias'), shape: [q], kind: 'bias' });
    specs.push({ name: l('self_attn.k_proj.weight'), shape: [kv, d], kind: 'linear' });
    specs.push({ name: l('self_attn.k_proj.bias'), shape: [kv], kind: 'bias' });
    specs.push({ name: l('self_attn.v_proj.weight'), shape: [kv, d], kind: 'linear' });
    specs.push({ name: l('self_attn.v_proj.bias'), shape: [kv], kind: 'bias' });
    specs.push({ name: l('self_attn.o_proj.weight'), shape: [d, q], kind: 'linear' });
    specs.push({ name: l('post_attention_layernorm.weight'), shape: [d], kind: 'norm' });
    specs.push({ name: l('mlp.gate_proj.weight'), shape: [ff, d], kind: 'linear' });
    specs.push({ name: l('mlp.up_proj.weight'), shape: [ff, d], kind: 'linear' });
    specs.push({ name: l('mlp.down_proj.weight'), shape: [d, ff], kind: 'linear' });
  }
  specs.push({ name: 'model.norm.weight', shape: [d], kind: 'norm' });
  if (!c.tie_word_embeddings) specs.push({ name: 'lm_head.weight', shape: [c.vocab_size, d], kind: 'linear' });
  for (const s of specs) s.numel = s.shape.reduce((a, b) => a * b, 1);
  return specs;
}

// ---- random numbers -------------------------------------------------------------------------------

/** Acklam's inverse normal CDF (relative error < 1.2e-9). */
function invNormCdf(p) {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const lo = 0.02425;
  if (p < lo) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -invNormCdf(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** float -> bf16 bits, round to nearest even (finite inputs). */
function bf16Bits(x) {
  f32[0] = x;
  const b = u32[0];
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** 65,536 equal-probability quantiles of N(0, std): as bf16 bits (Uint16Array) and f32 bits (Uint32Array). */
function normalTables(std) {
  const n = 65536;
  const bf = new Uint16Array(n);
  const fl = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const v = invNormCdf((i + 0.5) / n) * std;
    fl[i] = v;
    bf[i] = bf16Bits(v);
  }
  return { bf16: bf, f32: new Uint32Array(fl.buffer) };
}

const MASK64 = (1n << 64n) - 1n;
function splitmix64(state) {
  let z = (state + 0x9e3779b97f4a7c15n) & MASK64;
  const next = z;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return [next, z ^ (z >> 31n)];
}

/** FNV-1a 64 of a string (tensor names are ASCII). */
function fnv1a64(s) {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < s.length; i++) h = ((h ^ BigInt(s.charCodeAt(i))) * 0x100000001b3n) & MASK64;
  return h;
}

/** xorshift128 (Marsaglia) state for one tensor, from the seed and the tensor's name. */
function tensorRng(seed, name) {
  let s = (BigInt(seed) ^ fnv1a64(name)) & MASK64;
  const words = [];
  while (words.length < 4) {
    let r;
    [s, r] = splitmix64(s);
    words.push(Number(r & 0xffffffffn) >>> 0, Number(r >> 32n) >>> 0);
  }
  const st = new Uint32Array(words.slice(0, 4));
  if ((st[0] | st[1] | st[2] | st[3]) === 0) st[0] = 1;
  return st;
}

/** Fills out32 (n words) with pairs of bf16 normals: each 32-bit draw gives two 16-bit table indices. */
function fillBf16Pairs(out32, n, st, table) {
  let x = st[0],
    y = st[1],
    z = st[2],
    w = st[3];
  for (let i = 0; i < n; i++) {
    const t = x ^ (x << 11);
    x = y;
    y = z;
    z = w;
    w = (w ^ (w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    out32[i] = table[w & 0xffff] | (table[w >>> 16] << 16);
  }
  st[0] = x;
  st[1] = y;
  st[2] = z;
  st[3] = w;
}

/** Fills out32 (n words) with f32 normals, two per 32-bit draw. n even. */
function fillF32(out32, n, st, table) {
  let x = st[0],
    y = st[1],
    z = st[2],
    w = st[3];
  for (let i = 0; i < n; i += 2) {
    const t = x ^ (x << 11);
    x = y;
    y = z;
    z = w;
    w = (w ^ (w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    out32[i] = table[w & 0xffff];
    out32[i + 1] = table[w >>> 16];
  }
  st[0] = x;
  st[1] = y;
  st[2] = z;
  st[3] = w;
}

// ---- writing --------------------------------------------------------------------------------------

function safetensorsHeader(entries, metadata) {
  const header = { __metadata__: metadata };
  let offset = 0;
  for (const e of entries) {
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + e.bytes] };
    offset += e.bytes;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeBigUInt64LE(BigInt(padded), 0);
  json.copy(out, 8);
  return out;
}

/**
 * Streams one shard: the header, then each tensor in chunks. Two buffers alternate so that filling
 * one overlaps the write of the other (libuv's thread pool does the write).
 */
async function writeShard(file, specs, ctx) {
  const elt = ctx.dtype === 'bf16' ? 2 : 4;
  const st = ctx.dtype === 'bf16' ? 'BF16' : 'F32';
  const header = safetensorsHeader(
    specs.map((s) => ({ name: s.name, dtype: st, shape: s.shape, bytes: s.numel * elt })),
    ctx.metadata,
  );
  const fh = await fsp.open(file, 'w');
  let position = 0;
  let written = 0;
  try {
    await fh.write(header, 0, header.length, 0);
    position = header.length;
    written += header.length;
    let pending = null;
    let which = 0;
    for (const spec of specs) {
      const rng = spec.kind === 'norm' ? null : tensorRng(ctx.seed, spec.name);
      let left = spec.numel * elt;
      while (left > 0) {
        const bytes = Math.min(left, CHUNK_BYTES);
        const buf = ctx.buffers[which];
        which ^= 1;
        // The buffer filled two chunks ago must be written out before it is reused.
        if (pending && pending.buf === buf) {
          await pending.promise;
          pending = null;
        }
        const words = bytes >>> 2;
        const out32 = new Uint32Array(buf.buffer, buf.byteOffset, CHUNK_BYTES >>> 2);
        if (spec.kind === 'norm') {
          out32.fill(elt === 2 ? 0x3f803f80 : 0x3f800000, 0, words);
          if (bytes & 3) buf.writeUInt16LE(0x3f80, words * 4);
        } else if (elt === 2) {
          fillBf16Pairs(out32, words, rng, ctx.tables.bf16);
          if (bytes & 3) {
            // An odd element count: the last bf16 value from one more draw.
            const tail = new Uint32Array(1);
            fillBf16Pairs(tail, 1, rng, ctx.tables.bf16);
            buf.writeUInt16LE(tail[0] & 0xffff, words * 4);
          }
        } else {
          fillF32(out32, words, rng, ctx.tables.f32);
        }
        const prev = pending;
        const promise = fh.write(buf, 0, bytes, position).then((r) => {
          if (r.bytesWritten !== bytes) throw new Error(`short write to ${file}`);
        });
        position += bytes;
        left -= bytes;
        written += bytes;
        if (prev) await prev.promise; // at most two writes in flight, in order
        pending = { buf, promise };
      }
      ctx.progress(spec);
    }
    if (pending) await pending.promise;
  } finally {
    await fh.close();
  }
  return written;
}

function shardName(i, n) {
  return `model-${String(i + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const config = hfConfig(o.shape, o.dtype, o.layers);
  const specs = weightSpecs(config);
  const elt = o.dtype === 'bf16' ? 2 : 4;
  const params = specs.reduce((a, s) => a + s.numel, 0);
  const totalSize = params * elt;
  await fsp.mkdir(o.out, { recursive: true });

  const st = await fsp.statfs(o.out).catch(() => null);
  if (st && st.bavail * st.bsize < totalSize + (64 << 20)) {
    throw new Error(`${o.out}: ${(totalSize / 1e9).toFixed(2)} GB needed, ${((st.bavail * st.bsize) / 1e9).toFixed(2)} GB free`);
  }

  // Shards in HF order, greedily filled, as transformers and the engine's saveHfModelDir do.
  const shards = [];
  let cur = [];
  let curBytes = 0;
  for (const s of specs) {
    const b = s.numel * elt;
    if (cur.length > 0 && curBytes + b > o.maxShardBytes) {
      shards.push(cur);
      cur = [];
      curBytes = 0;
    }
    cur.push(s);
    curBytes += b;
  }
  if (cur.length) shards.push(cur);
  const weightFiles = shards.length === 1 ? ['model.safetensors'] : shards.map((_, i) => shardName(i, shards.length));

  // Weight files of an earlier run in the same folder that this one does not rewrite would be mixed in.
  for (const f of await fsp.readdir(o.out)) {
    const isWeights = f === 'model.safetensors' || f === 'model.safetensors.index.json' || /^model-\d{5}-of-\d{5}\.safetensors$/.test(f);
    if (isWeights && !weightFiles.includes(f)) await fsp.rm(path.join(o.out, f), { force: true });
  }

  process.stderr.write(
    `make-checkpoint: ${o.shape}${o.layers ? ` (${config.num_hidden_layers} layers)` : ''}, ${(params / 1e9).toFixed(3)}B parameters, ${(totalSize / 1e9).toFixed(2)} GB of ${o.dtype} in ${weightFiles.length} file(s) -> ${o.out}\n`,
  );
  const ctx = {
    dtype: o.dtype,
    seed: o.seed,
    tables: normalTables(STD),
    buffers: [Buffer.allocUnsafe(CHUNK_BYTES), Buffer.allocUnsafe(CHUNK_BYTES)],
    metadata: {
      format: 'pt',
      generator: 'opentinker libs/engine/bench/make-checkpoint.cjs',
      shape: o.shape,
      seed: String(o.seed),
      init: `normal(0,${STD}) weights and biases, ones for norms`,
    },
    done: 0,
    lastReport: Date.now(),
    progress(spec) {
      this.done += spec.numel * elt;
      if (Date.now() - this.lastReport > 5000) {
        this.lastReport = Date.now();
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        process.stderr.write(`  ${((100 * this.done) / totalSize).toFixed(0)}% (${(this.done / 1e9).toFixed(2)} GB, ${s.toFixed(0)} s)\n`);
      }
    },
  };

  const written = [];
  let bytes = 0;
  const weightMap = {};
  for (let i = 0; i < shards.length; i++) {
    bytes += await writeShard(path.join(o.out, weightFiles[i]), shards[i], ctx);
    for (const s of shards[i]) weightMap[s.name] = weightFiles[i];
    written.push(weightFiles[i]);
  }
  const writeJson = async (name, value) => {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    await fsp.writeFile(path.join(o.out, name), text);
    bytes += Buffer.byteLength(text);
    written.push(name);
  };
  if (shards.length > 1) {
    const sorted = Object.fromEntries(
      Object.keys(weightMap)
        .sort()
        .map((k) => [k, weightMap[k]]),
    );
    await writeJson('model.safetensors.index.json', { metadata: { total_size: totalSize }, weight_map: sorted });
  }
  await writeJson('config.json', config);
  await writeJson('generation_config.json', {
    bos_token_id: 151643,
    do_sample: false,
    eos_token_id: 151643,
    max_new_tokens: 2048,
    transformers_version: config.transformers_version,
  });

  const tokJson = fs.readFileSync(path.join(GOLDEN_TOKENIZER_DIR, 'tokenizer.json'));
  fs.writeFileSync(path.join(o.out, 'tokenizer.json'), tokJson);
  bytes += tokJson.length;
  written.push('tokenizer.json');
  const tokConfig = JSON.parse(fs.readFileSync(path.join(GOLDEN_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'));
  if (tokConfig.chat_template === undefined || tokConfig.chat_template === null) tokConfig.chat_template = CHATML_TEMPLATE;
  await writeJson('tokenizer_config.json', tokConfig);
  await fsp.rm(path.join(o.out, 'chat_template.jinja'), { force: true });

  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const result = {
    shape: o.shape,
    dir: o.out,
    dtype: o.dtype,
    layers: config.num_hidden_layers,
    params,
    totalSize,
    files: written,
    bytes,
    seconds: Math.round(seconds * 100) / 100,
    mibPerS: Math.round(bytes / 2 ** 20 / seconds),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  process.stderr.write(
    `make-checkpoint: wrote ${(bytes / 1e9).toFixed(3)} GB (${bytes} bytes) in ${seconds.toFixed(1)} s (${result.mibPerS} MiB/s), peak RSS ${result.peakRssMiB} MiB\n`,
  );

  if (o.check) {
    const dist = path.join(__dirname, '..', 'dist', 'index.js');
    try {
      const info = await require(dist).inspectHfModelDir(o.out);
      const n = info.tensors.length;
      result.check = {
        ok: true,
        tensors: n,
        storedDtype: info.storedDtype,
        weightFiles: info.weightFiles,
        layers: info.config.num_hidden_layers,
        stopTokenIds: info.stopTokenIds,
        chatTemplate: info.chatTemplate !== null,
        ignoredTensors: info.ignoredTensors,
      };
      if (n !== specs.length) throw new Error(`inspectHfModelDir saw ${n} tensors, expected ${specs.length}`);
    } catch (e) {
      result.check = { ok: false, error: String((e && e.message) || e) };
      process.stdout.write(`${JSON.stringify(result)}\n`);
      process.exit(1);
    }
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e) => {
  process.stderr.write(`make-checkpoint: ${(e && e.stack) || e}\n`);
  process.exit(1);
});
