#!/usr/bin/env node
/**
 * The engine side by side with PyTorch CPU on this machine, in one run (issue 4, section 4): the same
 * architecture and sizes, fp32, 2 threads. (a) vocab 64, d 128, 4 layers, 4 heads, batch 32 × 64;
 * (b) vocab 512, d 256, 6 layers, 8 heads, batch 16 × 128. Reports training tokens/s (forward + backward
 * + grad clip + AdamW), KV-cache sampling new-tokens/s (batch 32, prompt 8, 32 new tokens, temperature 1)
 * and each process's peak RSS, against the target engine ≥ 0.5× PyTorch.
 *
 * Each side runs as its own child process, one after the other, never at once: train.bench.js
 * (`--config a|b`) for the engine and torch_reference.py (`--bench`) for PyTorch, given the engine's own
 * ModelConfig. Before timing, a numerical check (skip with --no-check) exports the engine's initial
 * weights and a batch's logits (`train.bench.js --export-check`) and has PyTorch load them and compare
 * logits, the KV-cache path, the loss, the gradient norm and the logits after one training step.
 *
 * Run on a quiet machine, after building the engine:
 *   npx tsc -b libs/engine && flock -x /tmp/bench.lock node libs/engine/bench/vs-torch.bench.js
 * Options: --sizes a,b  --steps 10  --warmup 2  --sample-reps 3  --rounds 3 (medians over rounds; sides alternate who goes first)
 *          --python /usr/bin/python3 (or OPENTINKER_TORCH_PYTHON)  --no-check  --quick (smoke run)
 *          --out FILE (default bench/results/vs-torch-<date>.json)  --no-write
 * Exit status: 0 when it measured (whatever the ratios), 1 when the two models disagree (parameter count
 * or numerical check) or a side failed, 2 when PyTorch is not installed.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const HERE = __dirname;
const ENGINE_DIST = path.join(HERE, '..', 'dist', 'index.js');
const TARGET = 0.5;
const OPENBLAS_DIR = '/usr/lib/x86_64-linux-gnu/openblas-openmp';
const THREADS = 2;
const SIZES = { a: 'bench-a', b: 'bench-b' };

function parseArgs(argv) {
  const o = { sizes: ['a', 'b'], steps: 10, warmup: 2, sampleReps: 3, rounds: 3, check: true, write: true, out: undefined, python: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = () => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 1) throw new Error(`${a} needs a positive integer`);
      return v;
    };
    if (a === '--sizes') o.sizes = String(argv[++i]).split(',');
    else if (a === '--steps') o.steps = num();
    else if (a === '--warmup') o.warmup = num();
    else if (a === '--sample-reps') o.sampleReps = num();
    else if (a === '--rounds') o.rounds = num();
    else if (a === '--python') o.python = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--no-check') o.check = false;
    else if (a === '--no-write') o.write = false;
    else if (a === '--quick') Object.assign(o, { steps: 2, warmup: 1, sampleReps: 1, rounds: 1, quick: true });
    else throw new Error(`unknown option ${a} (see the header of ${__filename})`);
  }
  for (const s of o.sizes) if (!SIZES[s]) throw new Error(`--sizes: unknown size ${s} (known: ${Object.keys(SIZES).join(', ')})`);
  return o;
}

function pythonCommand(opts) {
  if (opts.python) return opts.python;
  if (process.env.OPENTINKER_TORCH_PYTHON) return process.env.OPENTINKER_TORCH_PYTHON;
  // Debian's python3-torch lives under /usr/bin/python3; a python3 earlier on PATH may lack it.
  return fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
}

/** Environment of both children: 2 threads, and for torch the OpenMP OpenBLAS (else Debian's reference BLAS, 20–30× slower). */
function childEnv() {
  const env = { ...process.env, OMP_NUM_THREADS: String(THREADS), OPENBLAS_NUM_THREADS: String(THREADS) };
  if (fs.existsSync(OPENBLAS_DIR)) env.LD_LIBRARY_PATH = [OPENBLAS_DIR, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return env;
}

const INSTALL_HELP = [
  'Install PyTorch for CPU (Debian 12): apt-get install -y python3-torch libopenblas0-openmp',
  `and run it with /usr/bin/python3 (or pass --python PATH / set OPENTINKER_TORCH_PYTHON); this script puts ${OPENBLAS_DIR}`,
  'first on LD_LIBRARY_PATH, without which Debian torch uses the reference BLAS and is 20-30x slower.',
].join('\n');

const PROBE = `
import json, sys
import torch
torch.set_num_threads(${THREADS})
a = torch.ones(256, 256)
(a @ a).sum().item()
maps = open('/proc/self/maps').read().splitlines()
libs = sorted({l.split()[-1] for l in maps if 'blas' in l.split()[-1].lower() or 'lapack' in l.split()[-1].lower()})
import numpy
print(json.dumps({'torch': torch.__version__, 'python': sys.version.split()[0], 'numpy': numpy.__version__, 'threads': torch.get_num_threads(), 'blasLibraries': libs}))
`;

function probeTorch(python, env) {
  const r = spawnSync(python, ['-c', PROBE], { env, encoding: 'utf8', timeout: 120_000 });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : (r.stderr || '').trim().split('\n').slice(-1)[0];
    return { ok: false, why };
  }
  return { ok: true, info: JSON.parse(r.stdout.trim().split('\n').pop()) };
}

/** Machine-wide CPU time from /proc/stat, in seconds: busy (user, nice, system, irq, softirq) and steal; null off Linux. */
function machineCpu() {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const hz = 100; // USER_HZ on Linux
    return { busy: (f[0] + f[1] + f[2] + f[5] + f[6]) / hz, steal: (f[7] || 0) / hz };
  } catch {
    return null;
  }
}

/**
 * Runs a child to completion and returns its last JSON line on stdout (stderr passes through). When the
 * child reports its own CPU seconds, adds `interference`: cores' worth of CPU that other processes (and
 * the hypervisor, as steal) used while it ran, the honest measure of how quiet the machine was.
 */
function runChild(label, cmd, args, env) {
  const t0 = Date.now();
  const cpu0 = machineCpu();
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20, timeout: 60 * 60_000 });
  const cpu1 = machineCpu();
  const secs = (Date.now() - t0) / 1000;
  if (r.error || r.status !== 0) throw new Error(`${label} failed (${r.error ? r.error.message : `exit ${r.status}`}): ${cmd} ${args.join(' ')}\n${r.stdout || ''}`);
  const line = r.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (!line) throw new Error(`${label} printed no JSON line: ${r.stdout}`);
  const res = JSON.parse(line);
  let note = '';
  if (cpu0 && cpu1 && typeof res.cpuSeconds === 'number') {
    // The child's CPU time includes its start-up, as the machine-wide count does.
    res.interference = {
      wallS: Math.round(secs * 100) / 100,
      otherCores: Math.round((Math.max(0, cpu1.busy - cpu0.busy - res.cpuSeconds) / secs) * 100) / 100,
      stealCores: Math.round(((cpu1.steal - cpu0.steal) / secs) * 100) / 100,
    };
    note = ` (other processes ${res.interference.otherCores} cores, steal ${res.interference.stealCores})`;
  }
  process.stderr.write(`  ${label}: ${secs.toFixed(1)} s${note}\n`);
  return res;
}

function git(args) {
  const r = spawnSync('git', args, { cwd: HERE, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

function medianBy(runs, get) {
  const xs = runs.map(get).sort((a, b) => a - b);
  const n = xs.length;
  return n % 2 ? xs[(n - 1) / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

function fmt(n, digits = 0) {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function table(rows) {
  const head = ['size', 'metric', 'engine', 'PyTorch', 'ratio', 'target', 'result'];
  const cells = rows.map((r) => [
    r.size,
    r.metric,
    fmt(r.engine, r.unit === 'MiB' ? 1 : 0),
    fmt(r.pytorch, r.unit === 'MiB' ? 1 : 0),
    `${r.ratio.toFixed(2)}×`,
    r.target === null ? '—' : `≥ ${r.target}×`,
    r.pass === null ? '—' : r.pass ? 'PASS' : 'FAIL',
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => (i < 2 ? x.padEnd(w[i]) : x.padStart(w[i]))).join('  ');
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...cells.map(line)].join('\n');
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const env = childEnv();
  const python = pythonCommand(opts);

  const probe = probeTorch(python, env);
  if (!probe.ok) {
    console.error(`vs-torch: PyTorch is not available to ${python}: ${probe.why}\n${INSTALL_HELP}`);
    process.exit(2);
  }
  if (!probe.info.blasLibraries.some((l) => l.includes('openblas'))) {
    console.error(
      `vs-torch: warning: torch did not load OpenBLAS (${probe.info.blasLibraries.join(', ') || 'no BLAS library seen'}); its numbers will be far below what it can do.\n${INSTALL_HELP}`,
    );
  }
  if (!fs.existsSync(ENGINE_DIST)) {
    console.error(`vs-torch: the engine is not built (${ENGINE_DIST} missing): run npx tsc -b libs/engine first`);
    process.exit(1);
  }
  const engine = require(ENGINE_DIST);
  const trainBench = path.join(HERE, 'train.bench.js');
  const torchRef = path.join(HERE, 'torch_reference.py');

  const started = new Date();
  const loadAvgBefore = os.loadavg();
  console.error(
    `vs-torch: ${os.cpus().length} × ${os.cpus()[0].model}; load average ${loadAvgBefore.map((x) => x.toFixed(2)).join(' ')}; torch ${probe.info.torch} (${probe.info.blasLibraries.join(', ')})`,
  );
  let failed = false;

  // 1. Do the two models compute the same function? (initial weights of the engine loaded into torch)
  const checks = {};
  if (opts.check) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vs-torch-check-'));
    try {
      for (const s of opts.sizes) {
        const exp = runChild(`check ${s}: engine export`, process.execPath, [trainBench, '--config', s, '--export-check', path.join(dir, s)], env);
        const cmp = runChild(
          `check ${s}: pytorch compare`,
          python,
          [torchRef, '--check', path.join(dir, s), '--size', s, '--config-json', JSON.stringify(engine.modelPreset(SIZES[s]))],
          env,
        );
        checks[s] = { engine: exp, pytorch: cmp };
        if (!cmp.pass || cmp.params !== exp.params) failed = true;
        console.error(
          `  check ${s}: logits max |diff| ${cmp.logitsMaxAbsDiff.toExponential(2)} (max |logit| ${cmp.logitsMaxAbs.toFixed(2)}), loss diff ${cmp.loss.absDiff.toExponential(2)}, ` +
            `grad-norm rel diff ${cmp.gradNorm.relDiff.toExponential(2)}, after one step ${cmp.afterStepLogitsMaxAbsDiff.toExponential(2)}: ${cmp.pass ? 'agree' : 'DISAGREE'}`,
        );
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  // 2. Speed: each side alone, sequentially.
  const runs = {};
  for (let round = 0; round < opts.rounds; round++) {
    for (const s of opts.sizes) {
      const common = ['--steps', opts.steps, '--warmup', opts.warmup, '--sample-reps', opts.sampleReps, '--sample-batch', 32, '--new-tokens', 32, '--prompt', 8].map(String);
      const runEngine = () => runChild(`round ${round + 1} size ${s}: engine`, process.execPath, [trainBench, '--config', s, ...common], env);
      const runTorch = () =>
        runChild(
          `round ${round + 1} size ${s}: pytorch`,
          python,
          [torchRef, '--bench', '--size', s, '--config-json', JSON.stringify(engine.modelPreset(SIZES[s])), '--threads', String(THREADS), ...common],
          env,
        );
      // Alternate which side goes first, so a drift in machine load does not always favour the same one.
      let e;
      let p;
      if (round % 2 === 0) {
        e = runEngine();
        p = runTorch();
      } else {
        p = runTorch();
        e = runEngine();
      }
      (runs[s] ??= []).push({ engine: e, pytorch: p });
      if (e.params !== p.params) {
        console.error(`vs-torch: size ${s}: parameter counts differ (engine ${e.params}, pytorch ${p.params}): not the same model`);
        failed = true;
      }
    }
  }
  const loadAvgAfter = os.loadavg();

  const rows = [];
  for (const s of opts.sizes) {
    const r = runs[s];
    const metrics = [
      ['train tokens/s', (x) => x.train.tokensPerS, TARGET, 'tok/s'],
      ['sample new tokens/s', (x) => x.sample.newTokensPerS, TARGET, 'tok/s'],
      ['train tokens/CPU-s', (x) => x.train.tokensPerCpuS, null, 'tok/s'],
      ['peak RSS MiB', (x) => x.peakRssMiB, null, 'MiB'],
    ];
    for (const [metric, get, target, unit] of metrics) {
      const eng = medianBy(r, (x) => get(x.engine));
      const pt = medianBy(r, (x) => get(x.pytorch));
      const ratio = eng / pt;
      rows.push({ size: s, metric, engine: eng, pytorch: pt, ratio, target, pass: target === null ? null : ratio >= target, unit });
    }
  }
  const engineInfo = runs[opts.sizes[0]][0].engine.backendInfo;
  const params = opts.sizes.map((s) => `${s} ${runs[s][0].engine.params.toLocaleString('en-US')}`).join(', ');
  console.log(
    `\nEngine (${engineInfo.name}${engineInfo.simd ? ' simd' : ''}) vs PyTorch ${probe.info.torch} CPU, fp32, ${THREADS} threads; ${opts.rounds > 1 ? `medians of ${opts.rounds} rounds` : 'one round'}; parameters ${params} (equal on both sides)`,
  );
  console.log(table(rows));
  console.log(`engine backend: ${JSON.stringify(engineInfo)}`);
  console.log(`load average before ${loadAvgBefore.map((x) => x.toFixed(2)).join(' ')}, after ${loadAvgAfter.map((x) => x.toFixed(2)).join(' ')} (${os.cpus().length} cores)`);
  const others = Object.values(runs)
    .flat()
    .flatMap((x) => [x.engine, x.pytorch])
    .filter((x) => x.interference)
    .map((x) => x.interference.otherCores + x.interference.stealCores);
  const interference = others.length
    ? { meanOtherCores: Math.round((others.reduce((a, b) => a + b, 0) / others.length) * 100) / 100, maxOtherCores: Math.round(Math.max(...others) * 100) / 100 }
    : null;
  if (interference)
    console.log(`CPU used by other processes (and steal) while a side ran: mean ${interference.meanOtherCores}, max ${interference.maxOtherCores} cores of ${os.cpus().length}`);

  const result = {
    date: started.toISOString(),
    seconds: Math.round((Date.now() - started.getTime()) / 1000),
    target: `engine >= ${TARGET} x PyTorch (training and sampling, both sizes)`,
    options: { ...opts, threads: THREADS },
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0].model,
      totalMemMiB: Math.round(os.totalmem() / 2 ** 20),
      kernel: `${os.type()} ${os.release()}`,
      node: process.version,
      loadAvgBefore,
      loadAvgAfter,
      interference,
    },
    git: {
      head: git(['rev-parse', 'HEAD']),
      engineChangesNotCommitted: (git(['status', '--porcelain', '--', path.join(HERE, '..', 'src'), path.join(HERE, '..', 'native')]) || '').split('\n').filter(Boolean),
    },
    engine: { backendInfo: engineInfo, env: { OMP_NUM_THREADS: env.OMP_NUM_THREADS, OPENTINKER_ENGINE_FAST_MATMUL: process.env.OPENTINKER_ENGINE_FAST_MATMUL ?? null } },
    pytorch: { python, ...probe.info, LD_LIBRARY_PATH: env.LD_LIBRARY_PATH ?? null },
    check: opts.check ? checks : 'skipped (--no-check)',
    table: rows,
    runs,
  };
  if (opts.write) {
    const out = opts.out ?? path.join(HERE, 'results', `vs-torch-${started.toISOString().slice(0, 10)}${opts.quick ? '-quick' : ''}.json`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
    console.log(`results: ${path.relative(process.cwd(), out)}`);
  }
  if (failed) {
    console.error('vs-torch: the two sides do not run the same model (see above): the ratios are not a fair comparison');
    process.exit(1);
  }
}

try {
  main();
} catch (e) {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
}
