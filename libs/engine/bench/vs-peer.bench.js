#!/usr/bin/env node
'use strict';
/**
 * The engine beside the peer a user would pick on a CPU: Hugging Face transformers + PEFT on PyTorch 2.x
 * in bf16 (peer_hf.py, in the virtualenv install-peer.sh makes), same machine, same run, 2 threads each,
 * the same random-weight bf16 checkpoints of Qwen2.5's shapes (make-checkpoint.cjs). Each measurement
 * runs in its own process; the two sides alternate who goes first per round; medians over rounds; peak
 * RSS of each process; the machine's load (`uptime`'s averages) before and after each side. It also
 * measures the machine's limits on the engine's threads (real-models.engine.cjs --mode limits: read
 * bandwidth and peak fp32/bf16 FLOP/s) and sets each case against them: bytes read per decoded token
 * against the read bandwidth, FLOPs per trained token against the peak. For the sampling cases the read
 * bandwidth is measured again right before each engine run (a shared machine's bandwidth drifts), and
 * the share of the limit is given for the decode passes (decodeTokensPerS: the limit is about them) and
 * for the whole call with its prefill (newTokensPerS).
 *
 *   bash libs/engine/bench/install-peer.sh && npm run build
 *   node libs/engine/bench/vs-peer.bench.js [--rounds 2] [--only lora-0.5b-4x256,...] [--out FILE] [--baseline DIR]
 *
 * --steps N / --reps N replace the cases' LoRA steps (after one warm-up step) and sampling repetitions, for
 * a shorter run on a busy machine.
 *
 * --baseline DIR adds a third side, the engine of another checkout (DIR/libs/engine built, with its
 * node_modules), so a change is measured against the code before it in the same run.
 *
 * Writes bench/results/vs-peer-<date>.json (or --out) and prints a table.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const HERE = __dirname;
const { checkpoint, runSide: runProcess, median } = require('./bench-process.cjs');
const PEER_PYTHON = path.join(HERE, '.venv-peer', 'bin', 'python');

/** The issue's cases, with their targets against the peer (ratio) or the bandwidth limit (share). */
const CASES = [
  {
    id: 'lora-0.5b-4x256',
    shape: 'qwen2.5-0.5b',
    mode: 'lora',
    args: ['--batch', '4', '--seq', '256', '--steps', '2', '--warmup', '1'],
    peerArgs: ['--micro', '1'],
    target: { ratio: 1.2, rss: true },
  },
  { id: 'sample-0.5b-b32', shape: 'qwen2.5-0.5b', mode: 'sample', args: ['--batch', '32', '--prompt', '64', '--new', '64', '--reps', '2'], target: { ratio: 1.2 } },
  { id: 'sample-0.5b-b1', shape: 'qwen2.5-0.5b', mode: 'sample', args: ['--batch', '1', '--prompt', '64', '--new', '64', '--reps', '3'], target: { bandwidth: 0.7 } },
  {
    id: 'lora-1.5b-1x256',
    shape: 'qwen2.5-1.5b',
    mode: 'lora',
    args: ['--batch', '1', '--seq', '256', '--steps', '2', '--warmup', '1'],
    peerArgs: ['--micro', '1'],
    target: { ratio: 1.0 },
  },
  { id: 'sample-1.5b-b1', shape: 'qwen2.5-1.5b', mode: 'sample', args: ['--batch', '1', '--prompt', '64', '--new', '32', '--reps', '3'], target: { bandwidth: 0.7 } },
];

function parseArgs(argv) {
  const o = { rounds: 2, only: null, out: path.join(HERE, 'results', `vs-peer-${new Date().toISOString().slice(0, 10)}.json`), sides: ['engine', 'peer'] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else if (argv[i] === '--only') o.only = argv[++i].split(',');
    else if (argv[i] === '--out') o.out = argv[++i];
    else if (argv[i] === '--engine-only') o.sides = ['engine'];
    else if (argv[i] === '--baseline') o.baseline = path.resolve(argv[++i]);
    else if (argv[i] === '--steps') o.steps = argv[++i];
    else if (argv[i] === '--reps') o.reps = argv[++i];
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));

/** One side's process with the machine's load before and after it. */
function runSide(command, args) {
  const loadBefore = load();
  const r = runProcess(command, args, { MKL_NUM_THREADS: '2', TOKENIZERS_PARALLELISM: 'false' });
  return { ...r, loadBefore, loadAfter: load() };
}

const metric = (r) => (r.error ? null : (r.newTokensPerS ?? r.tokensPerS ?? null));

/** Weight bytes a decode pass reads (bf16), FLOPs a token costs, from config.json. */
function modelCosts(dir, seqLen) {
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const d = c.hidden_size;
  const hd = c.head_dim ?? d / c.num_attention_heads;
  const kvd = c.num_key_value_heads * hd;
  const layerLinear = d * d * 2 + 2 * d * kvd + 3 * d * c.intermediate_size; // q, o, k, v, gate, up, down
  const head = c.vocab_size * d;
  const matmulParams = c.num_hidden_layers * layerLinear + head;
  return {
    config: c,
    /** bf16 weights read once per decode pass (the embedding lookup reads a row; the head reads the whole matrix) plus the norms. */
    decodeBytes: 2 * matmulParams + 2 * c.num_hidden_layers * 2 * d,
    /** Forward FLOPs per token at context length s: the products with weights plus attention's two products. */
    forwardFlops: (s) => 2 * matmulParams + c.num_hidden_layers * 4 * s * c.num_attention_heads * hd,
    /** KV-cache bytes per cached position (fp32 as the engine stores it, bf16 for the peer). */
    kvBytesPerPos: (bytes) => c.num_hidden_layers * 2 * kvd * bytes,
    seqLen,
  };
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const override = (args, flag, value) => (value === undefined || !args.includes(flag) ? args : args.map((a, i) => (args[i - 1] === flag ? value : a)));
  const cases = CASES.filter((c) => !o.only || o.only.includes(c.id)).map((c) => ({ ...c, args: override(override(c.args, '--steps', o.steps), '--reps', o.reps) }));
  if (o.sides.includes('peer') && !fs.existsSync(PEER_PYTHON)) {
    process.stderr.write(`no peer virtualenv at ${PEER_PYTHON}: run bash ${path.join(HERE, 'install-peer.sh')} first\n`);
    process.exit(2);
  }
  const limitsRun = runSide(process.execPath, [path.join(HERE, 'real-models.engine.cjs'), '--mode', 'limits']);
  const limits = limitsRun.limits;
  const report = {
    baseline: o.baseline ?? null,
    machine: {
      cpu: os.cpus()[0].model,
      cores: os.cpus().length,
      memGiB: Math.round(os.totalmem() / 2 ** 30),
      loadStart: load(),
      limits,
      limitsLoad: [limitsRun.loadBefore, limitsRun.loadAfter],
    },
    rounds: o.rounds,
    steps: o.steps ?? null,
    reps: o.reps ?? null,
    cases: [],
  };
  process.stderr.write(
    `limits: read ${(limits.readBytesPerS / 1e9).toFixed(1)} GB/s, triad ${(limits.triadBytesPerS / 1e9).toFixed(1)} GB/s, fp32 ${(limits.fp32FlopsPerS / 1e9).toFixed(0)} GFLOP/s, bf16 ${(limits.bf16FlopsPerS / 1e9).toFixed(0)} GFLOP/s\n`,
  );
  for (const c of cases) {
    const dir = checkpoint(c.shape);
    const sides = [];
    if (o.sides.includes('engine'))
      sides.push({ name: 'engine', cmd: process.execPath, args: [path.join(HERE, 'real-models.engine.cjs'), '--model', dir, '--mode', c.mode, ...c.args] });
    if (o.baseline) {
      const script = path.join(o.baseline, 'libs', 'engine', 'bench', 'real-models.engine.cjs');
      sides.push({ name: 'baseline', cmd: process.execPath, args: [script, '--model', dir, '--mode', c.mode, ...c.args] });
    }
    if (o.sides.includes('peer'))
      sides.push({ name: 'peer', cmd: PEER_PYTHON, args: [path.join(HERE, 'peer_hf.py'), '--model', dir, '--mode', c.mode, ...c.args, ...(c.peerArgs ?? [])] });
    const runs = Object.fromEntries(sides.map((s) => [s.name, []]));
    const bandwidth = [];
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const s of order) {
        if (c.mode === 'sample' && s.name === 'engine') {
          const b = runSide(process.execPath, [path.join(HERE, 'real-models.engine.cjs'), '--mode', 'limits', '--seconds', '0.05']);
          if (b.limits) bandwidth.push(b.limits.readBytesPerS);
        }
        const r = runSide(s.cmd, s.args);
        runs[s.name].push(r);
        process.stderr.write(`${c.id} round ${round + 1} ${s.name}: ${metric(r) ?? r.error} [${r.peakRssMib} MiB] load ${r.loadBefore[0]} → ${r.loadAfter[0]}\n`);
      }
    }
    const summary = Object.fromEntries(
      Object.entries(runs).map(([name, rs]) => [name, { value: median(rs.map(metric)), peakRssMib: median(rs.map((r) => r.peakRssMib)), error: rs.find((r) => r.error)?.error }]),
    );
    const costs = modelCosts(dir);
    const e = summary.engine?.value;
    const p = summary.peer?.value;
    const row = { id: c.id, shape: c.shape, mode: c.mode, unit: 'tokens/s', target: c.target, summary, runs };
    if (e && p) row.ratio = e / p;
    if (c.mode === 'sample') {
      const batch = Number(c.args[c.args.indexOf('--batch') + 1]);
      const ctx = Number(c.args[c.args.indexOf('--prompt') + 1]) + Number(c.args[c.args.indexOf('--new') + 1]) / 2;
      // A decode pass reads every weight once for the whole batch, and each row's cache.
      const passBytes = costs.decodeBytes + batch * ctx * costs.kvBytesPerPos(4);
      const read = median(bandwidth) ?? limits.readBytesPerS;
      row.limits = { bytesPerPass: passBytes, readBytesPerS: read, readBytesPerSRuns: bandwidth, bandwidthTokensPerS: (batch * read) / passBytes };
      const decode = (n) => median(runs[n]?.map((r) => (r.error ? null : r.decodeTokensPerS)) ?? []);
      if (e) Object.assign(row.limits, { engineShare: decode('engine') / row.limits.bandwidthTokensPerS, engineShareWithPrefill: e / row.limits.bandwidthTokensPerS });
      if (p) Object.assign(row.limits, { peerShare: decode('peer') / row.limits.bandwidthTokensPerS, peerShareWithPrefill: p / row.limits.bandwidthTokensPerS });
      const profile = runs.engine?.find((r) => r.decodeProfile)?.decodeProfile;
      if (profile) row.engineDecodeMsPerStep = profile.perStepMs;
    } else {
      const seq = Number(c.args[c.args.indexOf('--seq') + 1]);
      // LoRA: forward, then the input's gradient through every frozen product (as much again); the
      // adapters' own products are ~1 % and not counted.
      const flops = 2 * costs.forwardFlops(seq / 2);
      row.limits = { flopsPerToken: flops, fp32TokensPerS: limits.fp32FlopsPerS / flops, bf16TokensPerS: limits.bf16FlopsPerS / flops };
      if (e) row.limits.engineShareOfFp32Peak = e / row.limits.fp32TokensPerS;
      if (p) row.limits.peerShareOfBf16Peak = p / row.limits.bf16TokensPerS;
    }
    report.cases.push(row);
    // Written after every case, so a long run that is stopped keeps what it measured.
    report.machine.loadEnd = load();
    fs.mkdirSync(path.dirname(o.out), { recursive: true });
    fs.writeFileSync(o.out, JSON.stringify(report, null, 2) + '\n');
  }
  for (const c of report.cases) {
    const cell = (n) => (c.summary[n] ? `${n} ${c.summary[n].value?.toFixed(2) ?? `ERR(${String(c.summary[n].error).slice(0, 60)})`} [${c.summary[n].peakRssMib} MiB]` : '');
    const pct = (x) => (x === undefined ? '-' : `${(100 * x).toFixed(0)} %`);
    const lim = c.limits.bandwidthTokensPerS
      ? `bandwidth limit ${c.limits.bandwidthTokensPerS.toFixed(1)} (read ${(c.limits.readBytesPerS / 1e9).toFixed(1)} GB/s): decode at engine ${pct(c.limits.engineShare)}, peer ${pct(c.limits.peerShare)}; with prefill engine ${pct(c.limits.engineShareWithPrefill)}, peer ${pct(c.limits.peerShareWithPrefill)}`
      : `fp32 limit ${c.limits.fp32TokensPerS.toFixed(0)}, bf16 ${c.limits.bf16TokensPerS.toFixed(0)}`;
    process.stdout.write(
      `${c.id.padEnd(18)} ${cell('engine')} | ${cell('peer')}${c.summary.baseline ? ` | ${cell('baseline')}` : ''} | ratio ${c.ratio?.toFixed(2) ?? '-'} | ${lim}\n`,
    );
  }
  process.stdout.write(`wrote ${o.out}\n`);
}

main();
