#!/usr/bin/env node
'use strict';
/**
 * The engine beside PyTorch at real model sizes, on this machine, in one run: random-weight checkpoints
 * of Qwen2.5's architectures (make-checkpoint.cjs, bf16 on disk), each measurement in its own process,
 * the engine (real-models.engine.cjs) and PyTorch (torch_real_models.py, Debian's torch with OpenBLAS,
 * fp32 weights and bf16 weights) one after the other, alternating who goes first per round; medians over
 * rounds; peak RSS of each process; the machine's load before and after each side.
 *
 *   npx tsc -b libs/engine/tsconfig.json && node libs/engine/native/build.js
 *   flock -x /tmp/bench.lock node libs/engine/bench/real-models.bench.js [--rounds 2] [--only lora-0.5b,...] [--quick]
 *
 * Writes bench/results/real-models-<date>.json and prints a table. Checkpoints go to
 * $TMPDIR/opentinker-real-models/ and are reused across runs (delete them to free up to 24 GB).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const HERE = __dirname;
const { checkpoint, runSide, median } = require('./bench-process.cjs');

/** The measurements: the issue's table. */
const CASES = [
  { id: 'load-0.5b', shape: 'qwen2.5-0.5b', mode: 'load', args: [] },
  { id: 'sample-0.5b-b1', shape: 'qwen2.5-0.5b', mode: 'sample', args: ['--batch', '1', '--prompt', '64', '--new', '64'] },
  { id: 'sample-0.5b-b8', shape: 'qwen2.5-0.5b', mode: 'sample', args: ['--batch', '8', '--prompt', '64', '--new', '64'] },
  { id: 'sample-0.5b-b32', shape: 'qwen2.5-0.5b', mode: 'sample', args: ['--batch', '32', '--prompt', '64', '--new', '64'] },
  {
    id: 'lora-0.5b-4x256',
    shape: 'qwen2.5-0.5b',
    mode: 'lora',
    args: ['--batch', '4', '--seq', '256', '--steps', '2', '--warmup', '1'],
    torchArgs: [
      ['--micro', '4'],
      ['--micro', '1'],
    ],
  },
  {
    id: 'full-0.5b-4x256',
    shape: 'qwen2.5-0.5b',
    mode: 'full',
    args: ['--batch', '4', '--seq', '256', '--steps', '1', '--warmup', '1'],
    torchArgs: [['--micro', '1']],
    torchWeights: ['fp32'],
  },
  { id: 'lora-1.5b-1x256', shape: 'qwen2.5-1.5b', mode: 'lora', args: ['--batch', '1', '--seq', '256', '--steps', '2', '--warmup', '1'], torchArgs: [['--micro', '1']] },
  { id: 'sample-1.5b-b1', shape: 'qwen2.5-1.5b', mode: 'sample', args: ['--batch', '1', '--prompt', '64', '--new', '32'] },
  { id: 'sample-3b-b1', shape: 'qwen2.5-3b', mode: 'sample', args: ['--batch', '1', '--prompt', '32', '--new', '16'], torchWeights: ['bf16'] },
  { id: 'sample-7b-b1', shape: 'qwen2.5-7b', mode: 'sample', args: ['--batch', '1', '--prompt', '32', '--new', '8'], torchWeights: ['bf16'] },
];

function parseArgs(argv) {
  const o = { rounds: 2, only: null, quick: false, out: path.join(HERE, 'results', `real-models-${new Date().toISOString().slice(0, 10)}.json`) };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else if (argv[i] === '--only') o.only = argv[++i].split(',');
    else if (argv[i] === '--out') o.out = argv[++i];
    else if (argv[i] === '--quick') o.quick = true;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** The number each mode is judged by, from either side's JSON. */
function metric(mode, r) {
  if (r.error) return null;
  if (mode === 'load') return r.loadS ?? null;
  if (mode === 'sample') return r.newTokensPerS ?? r.sample?.newTokensPerS ?? null;
  return r.tokensPerS ?? r.train?.tokensPerS ?? r.lora?.tokensPerS ?? r.full?.tokensPerS ?? null;
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const cases = CASES.filter((c) => !o.only || o.only.includes(c.id));
  const report = {
    machine: { cpu: os.cpus()[0].model, cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), loadStart: os.loadavg() },
    rounds: o.rounds,
    quick: o.quick,
    cases: [],
  };
  for (const c of cases) {
    const dir = checkpoint(c.shape, o.quick);
    const sides = [{ name: 'engine', cmd: process.execPath, args: [path.join(HERE, 'real-models.engine.cjs'), '--model', dir, '--mode', c.mode, ...c.args] }];
    for (const w of c.torchWeights ?? ['fp32', 'bf16']) {
      for (const extra of c.torchArgs ?? [[]]) {
        sides.push({
          name: `pytorch-${w}${extra.length ? `-${extra.join('').replace(/^--/, '')}` : ''}`,
          cmd: '/usr/bin/python3',
          args: [path.join(HERE, 'torch_real_models.py'), '--model', dir, '--mode', c.mode, '--weights', w, ...c.args, ...extra],
        });
      }
    }
    const runs = Object.fromEntries(sides.map((s) => [s.name, []]));
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const s of order) {
        const r = runSide(s.cmd, s.args);
        runs[s.name].push(r);
        process.stderr.write(`${c.id} round ${round + 1} ${s.name}: ${metric(c.mode, r) ?? r.error}\n`);
      }
    }
    const summary = Object.fromEntries(
      Object.entries(runs).map(([name, rs]) => [
        name,
        { value: median(rs.map((r) => metric(c.mode, r))), peakRssMib: median(rs.map((r) => r.peakRssMib ?? r.peak_rss_mib ?? null)), error: rs.find((r) => r.error)?.error },
      ]),
    );
    report.cases.push({ id: c.id, shape: c.shape, mode: c.mode, unit: c.mode === 'load' ? 's' : 'tokens/s', summary, runs });
  }
  report.machine.loadEnd = os.loadavg();
  fs.mkdirSync(path.dirname(o.out), { recursive: true });
  fs.writeFileSync(o.out, JSON.stringify(report, null, 2) + '\n');
  for (const c of report.cases) {
    const cells = Object.entries(c.summary).map(
      ([n, s]) => `${n} ${s.value === null ? `ERR(${String(s.error).slice(0, 60)})` : s.value.toFixed(2)}${s.peakRssMib ? ` [${s.peakRssMib} MiB]` : ''}`,
    );
    process.stdout.write(`${c.id.padEnd(18)} ${c.unit.padEnd(9)} ${cells.join(' | ')}\n`);
  }
  process.stdout.write(`wrote ${o.out}\n`);
}

main();
