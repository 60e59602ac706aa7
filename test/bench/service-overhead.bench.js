#!/usr/bin/env node
'use strict';
/**
 * Overhead of the service path (issue 5: "the overhead of the service path versus calling the engine
 * directly; target under 10 %"). The same RL steps two ways:
 *
 * - direct: a fresh Node process calling the training code as a library (policy, environment,
 *   RlLearner: rollouts, advantages, update) with no server, queue, database or IPC;
 * - service: a `train` job submitted to an in-process server (SQLite, embedded queue and worker), run
 *   by the job runner child process, its metrics and logs going through IPC into the database.
 *
 * Both start cold in their own process with the same spec, seeds and engine threads. `--runs N` runs N
 * pairs in alternating order (direct, service, service, direct, ...) so that drift in the machine's load
 * falls on both sides; each run gets a fresh server and data directory. Per run it records seconds per RL
 * step (each step's own `timing/step_s` or wall time; the summary is over steps 2..N), the job's
 * submit-to-finish time from its own timestamps, the CPU seconds of the server process, of the runner or
 * direct process, and of everything else on the machine (from /proc/stat, steal included), and checks
 * that both sides trained the same rows at every step (same trajectories: the comparison is like for
 * like). The overhead is median(service) / median(direct) - 1 over the runs' s/step.
 *
 *   npm run build && node test/bench/service-overhead.bench.js [--steps 60] [--batch 32] [--rollout-n 8]
 *     [--runs 3] [--poll-ms 500] [--follow] [--out name.json] [--only direct|service] [--cpu-prof dir]
 *
 * `--follow` also reads the job's event stream (SSE) while it runs, as the dashboard and `opentinker
 * jobs watch` do. `--only` runs one side and writes no result file. `--cpu-prof <dir>` writes V8 CPU
 * profiles of this process (the server), the direct process and the job runner there (Node refuses
 * --cpu-prof in NODE_OPTIONS, so the runner is started through a wrapper that profiles it). Writes results/<out> (default service-overhead-<date>-<time>.json).
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync, readdirSync } = require('node:fs');
const { tmpdir, loadavg, cpus } = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const dist = (p) => require(join(root, 'dist', p));

function options(argv) {
  const o = { steps: 15, batch: 16, rolloutN: 8, runs: 3, pollMs: 500, follow: false, out: null, only: null, cpuProf: null, directChild: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      const x = Number(argv[++i]);
      if (!Number.isFinite(x)) throw new Error(`${a} wants a number`);
      return x;
    };
    if (a === '--steps') o.steps = v();
    else if (a === '--batch') o.batch = v();
    else if (a === '--rollout-n') o.rolloutN = v();
    else if (a === '--runs') o.runs = v();
    else if (a === '--poll-ms') o.pollMs = v();
    else if (a === '--follow') o.follow = true;
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--only') o.only = argv[++i];
    else if (a === '--cpu-prof') o.cpuProf = require('node:path').resolve(argv[++i]);
    else if (a === '--direct-child') o.directChild = argv[++i];
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

const o = options(process.argv.slice(2));
// Both paths run the engine with the same engine threads (the service passes this setting to its job
// runner; without it a job would get one thread per CPU slot it holds).
process.env.OPENTINKER_ENGINE_THREADS ??= String(require('node:os').availableParallelism());
const spec = {
  kind: 'train',
  environment: { id: 'math', config: { style: 'equation', difficulty: 3, test_size: 8 } },
  model: { preset: 'tiny-char', chat_template: 'plain' },
  algorithm: { rollout_n: o.rolloutN, filter_groups: true },
  rollout: { max_new_tokens: 6 },
  optim: { lr: 2e-4 },
  batch_size: o.batch,
  total_steps: o.steps,
  val_before_train: false,
  val_batch_size: 8,
  save_freq: 0,
};
const secs = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x, d = 4) => Math.round(x * 10 ** d) / 10 ** d;

/** CPU seconds: this process, its reaped children, and the whole machine (busy, steal) from /proc. */
function cpuSnapshot() {
  const self = process.cpuUsage();
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: field 3 is index 0, so cutime (16) and cstime (17) are indices 13 and 14.
  const children = (Number(f[13]) + Number(f[14])) / 100;
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu;
  return { self: (self.user + self.system) / 1e6, children, busy: (user + nice + system + irq + softirq) / 100, idle: (idle + iowait) / 100, steal: (steal ?? 0) / 100 };
}

/** CPU seconds of this process's threads by name (main thread, libuv pool, V8 platform, worker threads). */
function threadCpu() {
  const byTid = {};
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byTid[tid] = { name, s: (Number(f[11]) + Number(f[12])) / 100 };
    } catch {
      // the thread ended
    }
  }
  return byTid;
}

/** Thread CPU between two {@link threadCpu} snapshots, summed by thread name (threads that ended are missed). */
function threadDelta(a, b) {
  const out = {};
  for (const [tid, t] of Object.entries(b)) {
    // Node names every thread after the process; the main thread is the one whose id is the pid.
    const name = Number(tid) === process.pid ? 'main' : t.name;
    out[name] = round((out[name] ?? 0) + t.s - (a[tid]?.s ?? 0), 2);
  }
  return out;
}

function cpuDelta(a, b, wall) {
  const self = b.self - a.self;
  const children = b.children - a.children;
  const busy = b.busy - a.busy;
  return {
    wall_s: round(wall, 3),
    bench_process_s: round(self, 3),
    children_s: round(children, 3),
    other_processes_s: round(Math.max(0, busy - self - children), 3),
    steal_s: round(b.steal - a.steal, 3),
    idle_s: round(b.idle - a.idle, 3),
  };
}

/** The direct side, in a fresh process (`--direct-child <home>`): prints its result as one JSON line. */
async function directChild(home) {
  const { parseJobSpec } = dist('kinds/job-kinds.js');
  const { ensureEngineBackend } = dist('rollout/policy.js');
  const { openEnvironment } = dist('rollout/environment-handle.js');
  const { openTrainablePolicy, RlLearner } = dist('training/rl-learner.js');
  const { TaskCursor } = dist('rollout/task-cursor.js');
  const { mixSeed } = dist('rollout/agent-loop.js');
  const { Prng } = require('@opentinker/engine');
  const full = parseJobSpec(spec).spec;
  const workDir = join(home, 'direct');
  mkdirSync(workDir, { recursive: true });
  const paths = { hostRoot: root, pluginsDir: join(root, 'plugins'), home, jobsDir: join(home, 'jobs'), datasetsDir: join(home, 'datasets') };
  const ctx = {
    jobId: 'bench',
    spec: full,
    attempt: 1,
    resumeState: null,
    workDir,
    paths,
    signal: new AbortController().signal,
    log: () => undefined,
    progress: () => undefined,
    metrics: () => undefined,
    checkpoint: () => undefined,
    artifact: () => undefined,
    calls: { next: async () => null, reply: () => undefined },
  };
  const t0 = process.hrtime.bigint();
  await ensureEngineBackend();
  const policy = await openTrainablePolicy(full, ctx, null);
  const handle = await openEnvironment(full.environment, { paths, workDir, log: () => undefined, timeoutMs: 30_000 });
  const learner = await RlLearner.create({
    ctx,
    spec: full,
    policy,
    env: handle.env,
    envId: 'math',
    resumeDir: null,
    lr: () => full.optim.lr,
    rng: new Prng(mixSeed(full.seed, 0x7a1)),
  });
  const cursor = new TaskCursor(handle.env.tasks.size('train'), full.seed);
  const stepSeconds = [];
  const rows = [];
  for (let step = 1; step <= o.steps; step++) {
    const ts = process.hrtime.bigint();
    const tasks = await Promise.all(cursor.next(full.batch_size).map(async (index) => ({ index, task: await handle.env.tasks.get('train', index) })));
    const outcome = await learner.step(step, tasks);
    stepSeconds.push(secs(ts));
    rows.push(outcome.metrics['batch/rows_trained']);
  }
  // What the job does after its last step: a validation and the final checkpoint.
  const testTasks = await Promise.all(Array.from({ length: full.val_batch_size }, async (_, index) => ({ index, task: await handle.env.tasks.get('test', index) })));
  await learner.validate(o.steps, testTasks, 'the final validation');
  await learner.save({
    step: o.steps,
    total_steps: o.steps,
    cursor: cursor.state,
    cursor_start: 0,
    rng: new Prng(1).getState(),
    metrics: {},
    sft_steps: 0,
    created: new Date().toISOString(),
  });
  const total = secs(t0);
  learner.dispose();
  await handle.close();
  policy.dispose();
  process.stdout.write(JSON.stringify({ stepSeconds, rows, total }) + '\n');
}

/** Runs the direct side in a child process; its CPU time shows up in this process's reaped children. */
async function direct(home) {
  const prof = o.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProf, '--cpu-prof-name', `direct-${Date.now()}.cpuprofile`] : [];
  const args = [...prof, __filename, '--steps', String(o.steps), '--batch', String(o.batch), '--rollout-n', String(o.rolloutN), '--direct-child', home];
  const t0 = process.hrtime.bigint();
  const before = cpuSnapshot();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  const code = await new Promise((r) => child.on('close', r));
  const cpu = cpuDelta(before, cpuSnapshot(), secs(t0));
  if (code !== 0) throw new Error(`the direct run exited with ${code}`);
  const r = JSON.parse(out.trim().split('\n').pop());
  return { ...r, cpu };
}

/** With --cpu-prof, the job runners the service starts profile themselves (they inherit NODE_OPTIONS). */
function profileRunners() {
  if (!o.cpuProf) return;
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${o.cpuProf}`.trim();
}

async function service(home) {
  const { createApi, ensureAdmin } = dist('app.js');
  const { loadConfig } = dist('config/app-config.js');
  const key = 'otk_bench_admin_key_0123456789abcdef';
  const config = loadConfig(
    {},
    {
      home: join(home, 'server'),
      admin_key: key,
      cpu_slots: 1,
      gpus: 'none',
      log_level: 'error',
      engine_threads: process.env.OPENTINKER_ENGINE_THREADS,
    },
  );
  profileRunners();
  const app = await createApi({ config, worker: true, logger: ['error'] });
  await ensureAdmin(app);
  await app.getHttpAdapter().getInstance().ready();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method, url, body) => {
    const res = await app.inject({ method, url, headers, payload: body ? JSON.stringify(body) : undefined });
    return JSON.parse(res.body);
  };
  const t0 = process.hrtime.bigint();
  const before = cpuSnapshot();
  const threadsBefore = threadCpu();
  const job = await call('POST', '/v1/jobs', spec);
  let followed = null;
  if (o.follow) {
    // The event stream as a client reads it (Server-Sent Events over a real socket: inject would buffer it).
    await app.listen(0, '127.0.0.1');
    followed = fetch(`${await app.getUrl()}/v1/jobs/${job.id}/events`, { headers }).then(async (res) => {
      let events = 0;
      const decoder = new TextDecoder();
      for await (const chunk of res.body) events += (decoder.decode(chunk).match(/\n\n/g) ?? []).length;
      return events;
    });
  }
  let state = job;
  let polls = 0;
  // The server's CPU against the job's progress at each poll: its cost per RL step while steps run
  // (from the first poll past step 1 to the last one before the final validation).
  const marks = [];
  while (!['succeeded', 'failed', 'cancelled'].includes(state.state)) {
    await new Promise((r) => setTimeout(r, o.pollMs));
    state = await call('GET', `/v1/jobs/${job.id}`);
    polls++;
    const step = state.progress?.step ?? 0;
    if (state.state === 'running' && step >= 2 && step < o.steps) marks.push({ step, cpu: process.cpuUsage(), threads: threadCpu() });
  }
  let serverPerStep = null;
  if (marks.length >= 2 && marks[marks.length - 1].step > marks[0].step) {
    const [a, b] = [marks[0], marks[marks.length - 1]];
    const n = b.step - a.step;
    const main = threadDelta(a.threads, b.threads).main;
    serverPerStep = { steps: n, cpu_ms: round((b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system) / 1000 / n, 2), main_thread_ms: round((main * 1000) / n, 2) };
  }
  const cpu = { ...cpuDelta(before, cpuSnapshot(), secs(t0)), server_threads_s: threadDelta(threadsBefore, threadCpu()) };
  if (state.state !== 'succeeded') throw new Error(`the job ${state.state}: ${state.error}`);
  const sseEvents = followed ? await followed : null;
  // Submit to finish from the job's own timestamps (not this loop's polling interval).
  const total = (Date.parse(state.finished_at) - Date.parse(state.created_at)) / 1000;
  const series = async (name) => (await call('GET', `/v1/jobs/${job.id}/metrics?name=${encodeURIComponent(name)}`)).map((p) => p.value);
  const stepSeconds = await series('timing/step_s');
  const rows = await series('batch/rows_trained');
  await app.close();
  return { stepSeconds, rows, total, cpu, serverPerStep, polls, sseEvents };
}

function summary(run) {
  const steady = run.stepSeconds.slice(1);
  return { mean_s_per_step: round(mean(steady)), median_s_per_step: round(median(steady)), total_s: round(run.total, 3) };
}

async function main() {
  if (o.directChild) return directChild(o.directChild);
  const started = new Date();
  console.log(
    `${o.runs} × (direct, service) with ${o.steps} RL steps × ${o.batch} tasks × ${o.rolloutN} samples (tiny-char, math equations), ` +
      `engine threads ${process.env.OPENTINKER_ENGINE_THREADS}, polling every ${o.pollMs} ms${o.follow ? ', following the event stream' : ''}; load ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
  );
  const runs = [];
  for (let i = 0; i < o.runs; i++) {
    // ABBA order: direct first in even pairs, service first in odd ones.
    const order = (i % 2 === 0 ? ['direct', 'service'] : ['service', 'direct']).filter((side) => !o.only || side === o.only);
    const pair = { loadavg_before: loadavg().map((x) => round(x, 2)) };
    for (const side of order) {
      const home = mkdtempSync(join(tmpdir(), 'ot-overhead-'));
      try {
        const r = side === 'direct' ? await direct(home) : await service(home);
        pair[side] = { ...summary(r), ...r };
        const c = r.cpu;
        console.log(
          `run ${i + 1} ${side.padEnd(7)}: ${pair[side].mean_s_per_step.toFixed(3)} s/step mean, ${pair[side].median_s_per_step.toFixed(3)} median (steps 2..${o.steps}), ` +
            `${r.total.toFixed(1)} s in all; cpu: ${side === 'service' ? `server ${c.bench_process_s.toFixed(2)} s, runner` : 'process'} ${c.children_s.toFixed(2)} s, ` +
            `other processes ${c.other_processes_s.toFixed(2)} s, steal ${c.steal_s.toFixed(2)} s over ${c.wall_s.toFixed(1)} s`,
        );
        if (c.server_threads_s) console.log(`  server threads (cpu s): ${JSON.stringify(c.server_threads_s)}; while steps ran, per step: ${JSON.stringify(r.serverPerStep)}`);
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
    if (o.only) {
      runs.push(pair);
      continue;
    }
    pair.same_rows_every_step = JSON.stringify(pair.direct.rows) === JSON.stringify(pair.service.rows);
    pair.overhead_per_step = round(pair.service.mean_s_per_step / pair.direct.mean_s_per_step - 1);
    pair.overhead_end_to_end = round(pair.service.total_s / pair.direct.total_s - 1);
    console.log(
      `run ${i + 1} overhead: ${(pair.overhead_per_step * 100).toFixed(1)} % per step, ${(pair.overhead_end_to_end * 100).toFixed(1)} % end to end; same rows trained: ${pair.same_rows_every_step}`,
    );
    runs.push(pair);
  }
  if (o.only) return; // a profiling run (--only direct|service): nothing to compare
  const md = (side, key) => round(median(runs.map((r) => r[side][key])));
  const result = {
    date: started.toISOString(),
    options: { steps: o.steps, batch: o.batch, rolloutN: o.rolloutN, runs: o.runs, pollMs: o.pollMs, follow: o.follow },
    engineThreads: Number(process.env.OPENTINKER_ENGINE_THREADS),
    cpus: cpus().length,
    loadavg_after: loadavg().map((x) => round(x, 2)),
    summary: {
      direct_s_per_step: md('direct', 'mean_s_per_step'),
      service_s_per_step: md('service', 'mean_s_per_step'),
      direct_total_s: md('direct', 'total_s'),
      service_total_s: md('service', 'total_s'),
      overhead_per_step: round(md('service', 'mean_s_per_step') / md('direct', 'mean_s_per_step') - 1),
      overhead_end_to_end: round(md('service', 'total_s') / md('direct', 'total_s') - 1),
      overhead_per_step_by_run: runs.map((r) => r.overhead_per_step),
      server_cpu_ms_per_step: round(median(runs.filter((r) => r.service.serverPerStep).map((r) => r.service.serverPerStep.cpu_ms)), 2),
      same_rows_every_step: runs.every((r) => r.same_rows_every_step),
    },
    runs,
  };
  const s = result.summary;
  console.log(
    `median over ${o.runs} runs: direct ${s.direct_s_per_step.toFixed(3)} s/step, service ${s.service_s_per_step.toFixed(3)} s/step: ` +
      `overhead ${(s.overhead_per_step * 100).toFixed(1)} % per step (runs: ${s.overhead_per_step_by_run.map((x) => `${(x * 100).toFixed(1)} %`).join(', ')}), ` +
      `${(s.overhead_end_to_end * 100).toFixed(1)} % end to end (target < 10 %)`,
  );
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = o.out?.startsWith('/') ? o.out : join(dir, o.out ?? `service-overhead-${result.date.slice(0, 19).replace(/:/g, '')}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
