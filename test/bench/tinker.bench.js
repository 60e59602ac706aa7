#!/usr/bin/env node
'use strict';
/**
 * The Tinker API's costs (issue 26), on a Qwen2.5-0.5B-shaped base with random weights:
 *
 * 1. overhead: forward_backward + optim_step of one training client (one datum of --seq tokens,
 *    cross_entropy, LoRA rank --rank on every linear and the unembedding, as the SDK creates it) sent
 *    by the official Python SDK to `opentinker serve` (HTTP, protobuf, the database, the worker's call
 *    relay, the runner's IPC), against the same engine calls made directly in a Node process (the
 *    runner's AdapterHost, datumBatch, @opentinker/rl's cross_entropy, AdamW), both with --threads
 *    engine threads. Overhead = median SDK request / median direct step - 1 (target < 10 %).
 * 2. interleaved throughput: --clients training clients of one session on the same base, each
 *    sending its step before any result is awaited, against one client alone: steps per second.
 * 3. memory: the peak RSS (VmHWM) of the one runner that holds the --clients adapters, against one
 *    `session` job (its own copy of the base, a LoRA of the same rank on the same linears, one
 *    train_step) times --clients: --clients session jobs of 0.5B do not fit beside the other work on
 *    a 24 GiB machine, so one is measured and multiplied (the table says so).
 *
 * Rounds alternate the order of the cases (direct, one, many; then many, one, direct) so that drift in
 * the machine's load falls on every side; each SDK case is a fresh session (a fresh runner job), its
 * model load outside the timed steps. The load average is recorded with every number.
 *
 *   npm run build && bash test/tinker/setup-sdk.sh     # once: the build and .venv-tinker
 *   node test/bench/tinker.bench.js [--rounds 2] [--steps 3] [--seq 64] [--rank 16] [--clients 8]
 *     [--threads 2] [--model DIR] [--no-session] [--out FILE.json]
 *
 * --model defaults to <tmp>/opentinker-bench-qwen2.5-0.5b, written by libs/engine/bench/make-checkpoint.cjs
 * when missing. Prints a table; writes results/tinker-<date>.json (or --out).
 */
const { spawn, execFileSync } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir, loadavg } = require('node:os');
const { dirname, join } = require('node:path');

const root = join(__dirname, '..', '..');
const load = () => loadavg().map((x) => Number(x.toFixed(2)));
const uptime = () => execFileSync('uptime').toString().trim();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (s) => Number((s * 1000).toFixed(1));
const mib = (kb) => Math.round(kb / 1024);
/** Token ids below the checkpoint tokenizer's 307 (make-checkpoint.cjs). */
const VOCAB = 300;

function options(argv) {
  const o = { rounds: 2, steps: 3, seq: 64, rank: 16, clients: 8, threads: 2, model: null, session: true, out: null, direct: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--no-session') o.session = false;
    else if (a === '--model' || a === '--out' || a === '--direct') o[a.slice(2)] = argv[++i];
    else if (['--rounds', '--steps', '--seq', '--rank', '--clients', '--threads'].includes(a)) o[a.slice(2)] = Number(argv[++i]);
    else throw new Error(`unknown option ${a}`);
  }
  o.model ??= join(tmpdir(), 'opentinker-bench-qwen2.5-0.5b');
  return o;
}

/** The datum every case trains on: --seq random tokens (seeded as the SDK client seeds its own). */
function tokens(seq, seed) {
  let x = seed >>> 0 || 1;
  return Array.from({ length: seq + 1 }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % VOCAB;
  });
}

// --- the direct side: the runner's engine calls, in this process -------------------------------------

async function direct(o) {
  const engine = require(join(root, 'libs', 'engine', 'dist', 'index.js'));
  const { tinkerLoss } = require(join(root, 'libs', 'rl', 'dist', 'index.js'));
  const { AdapterHost } = require(join(root, 'dist', 'kinds', 'tinker', 'adapter-host.js'));
  await engine.initBackend({ threads: o.threads });
  const info = await engine.inspectHfModelDir(o.model);
  const model = engine.Model.fromWeights(info.config, await engine.mapHfModelWeights(info), { trainable: false });
  const host = new AdapterHost(model);
  host.create('train-0', { rank: o.rank, seed: 0, trainAttn: true, trainMlp: true, trainUnembed: true });
  const t = tokens(o.seq, 7);
  const inputs = { target_tokens: t.slice(1), weights: new Array(o.seq).fill(1) };
  const step = () => {
    const t0 = performance.now();
    const db = engine.datumBatch([{ input: t.slice(0, -1), targets: inputs.target_tokens }]);
    host.accumulate('train-0', db.batch, ({ logProbs }) => ({
      logProbCoef: db.tokenAligned(db.perDatum(logProbs).map((lp) => tinkerLoss('cross_entropy', { logProbs: lp, inputs }, {}).dLogProb)),
    }));
    host.step('train-0', { lr: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weightDecay: 0, gradClipNorm: 0 });
    return (performance.now() - t0) / 1000;
  };
  step();
  const latencies = Array.from({ length: o.steps }, step);
  process.stdout.write(JSON.stringify({ latencies_s: latencies }) + '\n');
}

function runDirect(o) {
  const out = execFileSync(
    process.execPath,
    [__filename, '--direct', '1', '--model', o.model, '--steps', String(o.steps), '--seq', String(o.seq), '--rank', String(o.rank), '--threads', String(o.threads)],
    {
      cwd: root,
      maxBuffer: 1 << 24,
    },
  );
  return JSON.parse(out.toString().trim().split('\n').pop());
}

// --- the server side ------------------------------------------------------------------------------

const ADMIN = 'otk_bench_admin_key_0123456789abcdef';

async function startServer(o, home) {
  const port = await new Promise((resolve) => {
    const s = require('node:net').createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const env = {
    ...process.env,
    OPENTINKER_HOME: home,
    OPENTINKER_ADMIN_KEY: ADMIN,
    OPENTINKER_MODEL_ROOTS: dirname(o.model),
    OPENTINKER_CPU_SLOTS: String(o.threads),
    OPENTINKER_TINKER_CPU_SLOTS: String(o.threads),
    OPENTINKER_GPUS: 'none',
    OPENTINKER_LOG_LEVEL: 'warn',
    HF_HUB_OFFLINE: '1',
  };
  const child = spawn(process.execPath, [join(root, 'bin', 'opentinker.js'), 'serve', '--host', '127.0.0.1', '--port', String(port)], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 120; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return { child, url };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the server did not start');
}

/** Processes under `pid` (children, grandchildren, ...). */
function descendants(pid) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      (kids.get(ppid) ?? kids.set(ppid, []).get(ppid)).push(Number(d));
    } catch {
      /* gone */
    }
  }
  const out = [];
  const walk = (p) => (kids.get(p) ?? []).forEach((c) => (out.push(c), walk(c)));
  walk(pid);
  return out;
}

/** The job runner processes under the server. */
function runners(serverPid) {
  return descendants(serverPid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('job-runner');
    } catch {
      return false;
    }
  });
}

/** Waits until the runners of earlier cases have exited, so that none computes or counts beside the next. */
async function noRunners(serverPid) {
  for (let i = 0; i < 600 && runners(serverPid).length > 0; i++) await new Promise((r) => setTimeout(r, 200));
}

/** Peak RSS (VmHWM, KiB) of the job runners started under the server while `done` is pending. */
async function watchRunnerPeak(serverPid, done) {
  const before = new Set(runners(serverPid));
  let peak = 0;
  let finished = false;
  done.finally(() => (finished = true)).catch(() => undefined);
  while (!finished) {
    for (const pid of runners(serverPid)) {
      if (before.has(pid)) continue;
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]));
      } catch {
        /* gone */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return peak;
}

function runSdk(o, url, clients) {
  return new Promise((resolve, reject) => {
    const py = join(root, '.venv-tinker', 'bin', 'python');
    const args = [join(__dirname, 'tinker_bench_client.py'), url, o.model, String(clients), String(o.steps), String(o.seq), String(o.rank), String(VOCAB)];
    const child = spawn(py, args, { env: { ...process.env, TINKER_API_KEY: `tml-${ADMIN}` }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`the SDK client exited with ${code}`))));
  });
}

async function api(url, method, path, body) {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** One session job (its own base, LoRA rank --rank on every linear), one train_step; its runner's peak RSS. */
async function sessionPeak(o, server) {
  const spec = {
    kind: 'session',
    environment: { id: 'math', config: { style: 'equation', difficulty: 1, test_size: 4 } },
    model: { path: o.model, lora: { rank: o.rank, target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] } },
    algorithm: { rollout_n: 2 },
    rollout: { max_new_tokens: 8 },
    batch_size: 1,
  };
  const job = await api(server.url, 'POST', '/v1/jobs', spec);
  const stepped = (async () => {
    for (;;) {
      const call = await api(server.url, 'POST', `/v1/jobs/${job.id}/calls?wait_seconds=60`, { call_id: 'bench-step', op: 'train_step', args: { batch_size: 1 } });
      if (call.state === 'succeeded') return call;
      if (call.state === 'failed') throw new Error(`train_step failed: ${call.error}`);
    }
  })();
  const peak = watchRunnerPeak(server.child.pid, stepped);
  await stepped;
  const kb = await peak;
  await api(server.url, 'POST', `/v1/jobs/${job.id}/calls?wait_seconds=60`, { call_id: 'bench-close', op: 'close', args: {} });
  return kb;
}

async function main() {
  const o = options(process.argv.slice(2));
  if (o.direct) return direct(o);
  if (!existsSync(join(o.model, 'config.json'))) {
    execFileSync(process.execPath, [join(root, 'libs', 'engine', 'bench', 'make-checkpoint.cjs'), '--shape', 'qwen2.5-0.5b', '--out', o.model], { stdio: 'inherit' });
  }
  const home = mkdtempSync(join(tmpdir(), 'opentinker-tinker-bench-'));
  const server = await startServer(o, home);
  const rows = [];
  const record = (round, kase, extra) => {
    const row = { round, case: kase, uptime: uptime(), load: load(), ...extra };
    rows.push(row);
    console.error(`${kase}: ${JSON.stringify(extra)} | ${row.uptime}`);
  };
  try {
    for (let round = 1; round <= o.rounds; round++) {
      const order = round % 2 ? ['direct', 'one', 'many'] : ['many', 'one', 'direct'];
      for (const kase of order) {
        await noRunners(server.child.pid);
        if (kase === 'direct') {
          const r = runDirect(o);
          record(round, 'direct', { latencies_s: r.latencies_s });
        } else {
          const clients = kase === 'one' ? 1 : o.clients;
          const run = runSdk(o, server.url, clients);
          const peak = watchRunnerPeak(server.child.pid, run);
          const r = await run;
          record(round, kase, { clients, latencies_s: r.latencies_s, step_walls_s: r.step_walls_s, runner_peak_kb: await peak });
        }
      }
    }
    if (o.session) {
      await noRunners(server.child.pid);
      record(0, 'session', { runner_peak_kb: await sessionPeak(o, server) });
    }
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    rmSync(home, { recursive: true, force: true });
  }

  const of = (kase) => rows.filter((r) => r.case === kase);
  const lat = (kase) => median(of(kase).flatMap((r) => r.latencies_s));
  const loads = (kase) =>
    of(kase)
      .map((r) => r.load[0])
      .join(', ');
  const stepsPerS = (kase) => median(of(kase).map((r) => (r.clients * r.step_walls_s.length) / r.step_walls_s.reduce((a, b) => a + b, 0)));
  const peak = (kase) => Math.max(...of(kase).map((r) => r.runner_peak_kb));
  const overhead = lat('one') / lat('direct') - 1;
  const table = [
    ['measure', 'value', 'load (1 min) per run'],
    ['forward_backward + optim_step, engine direct (median)', `${ms(lat('direct'))} ms`, loads('direct')],
    ['the same through the SDK and the server, 1 client (median)', `${ms(lat('one'))} ms`, loads('one')],
    ['overhead (target < 10 %)', `${(overhead * 100).toFixed(1)} % (${ms(lat('one') - lat('direct'))} ms)`, ''],
    [
      'overhead per round (medians of its steps)',
      Array.from({ length: o.rounds }, (_, i) => {
        const m = (kase) => median(rows.find((r) => r.case === kase && r.round === i + 1).latencies_s);
        return `${((m('one') / m('direct') - 1) * 100).toFixed(1)} %`;
      }).join(', '),
      '',
    ],
    ['steps/s, 1 client', stepsPerS('one').toFixed(3), loads('one')],
    [`steps/s, ${o.clients} clients interleaved on one runner`, `${stepsPerS('many').toFixed(3)} (${(stepsPerS('many') / stepsPerS('one')).toFixed(2)}x)`, loads('many')],
    ['runner peak RSS, 1 client', `${mib(peak('one'))} MiB`, loads('one')],
    [`runner peak RSS, ${o.clients} clients`, `${mib(peak('many'))} MiB`, loads('many')],
  ];
  if (o.session) {
    const s = peak('session');
    table.push(['one session job, peak RSS (LoRA train_step)', `${mib(s)} MiB`, loads('session')]);
    table.push([
      `${o.clients} session jobs (one measured x ${o.clients}, not run side by side)`,
      `${mib(s * o.clients)} MiB (${((s * o.clients) / peak('many')).toFixed(1)}x the one runner)`,
      '',
    ]);
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(
    `Tinker API bench: Qwen2.5-0.5B-shaped base (random bf16), LoRA rank ${o.rank}, one datum of ${o.seq} tokens, ${o.steps} steps per case, ${o.rounds} rounds, ${o.threads} engine threads`,
  );
  console.log([line(table[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...table.slice(1).map(line)].join('\n'));
  const out = o.out ?? join(__dirname, 'results', `tinker-${new Date().toISOString().slice(0, 10)}.json`);
  writeFileSync(
    out,
    JSON.stringify({ options: { ...o, model: 'qwen2.5-0.5b (make-checkpoint.cjs)' }, summary: Object.fromEntries(table.slice(1).map((r) => [r[0], r[1]])), rows }, null, 2) + '\n',
  );
  console.log(`wrote ${out}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
