#!/usr/bin/env node
'use strict';
/**
 * Overhead of the service path (issue 5: "the overhead of the service path versus calling the engine
 * directly; target under 10 %"). The same RL steps two ways:
 *
 * - direct: in this process, the training code called as a library (policy, environment, RlLearner:
 *   rollouts, advantages, update) with no server, queue, child process, database or IPC;
 * - service: a `train` job submitted to an in-process server (SQLite, embedded queue and worker), run
 *   by the job runner child process, its metrics and logs going through IPC into the database.
 *
 * Prints seconds per RL step both ways (steady state: the mean of the job's own `timing/step_s` and
 * the wall time between its first and last step events), the job's end-to-end wall time from submit
 * to succeeded, and the overhead; writes results/service-overhead-<date>.json.
 *
 *   npm run build && node test/bench/service-overhead.bench.js [--steps 15] [--batch 16] [--rollout-n 8]
 */
const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = require('node:fs');
const { tmpdir, loadavg, cpus } = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const dist = (p) => require(join(root, 'dist', p));

function options(argv) {
  const o = { steps: 15, batch: 16, rolloutN: 8 };
  for (let i = 0; i < argv.length; i++) {
    const v = Number(argv[i + 1]);
    if (argv[i] === '--steps') (o.steps = v), i++;
    else if (argv[i] === '--batch') (o.batch = v), i++;
    else if (argv[i] === '--rollout-n') (o.rolloutN = v), i++;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

const o = options(process.argv.slice(2));
// Both paths run the engine with the same BLAS threads (the job runner inherits this setting; without it
// a job would get one thread per CPU slot it holds).
process.env.OPENTINKER_ENGINE_BLAS_THREADS ??= String(require('node:os').availableParallelism());
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

async function direct(home) {
  const { parseJobSpec } = dist('jobs/kinds/job-kinds.js');
  const { ensureEngineBackend } = dist('training/policy.js');
  const { openEnvironment } = dist('training/environment-handle.js');
  const { openTrainablePolicy, RlLearner } = dist('training/rl-learner.js');
  const { TaskCursor } = dist('training/task-cursor.js');
  const { mixSeed } = dist('training/agent-loop.js');
  const { Prng } = require('@opentinker/engine');
  const full = parseJobSpec(spec).spec;
  const workDir = join(home, 'direct');
  mkdirSync(workDir, { recursive: true });
  const paths = { hostRoot: root, pluginsDir: join(root, 'plugins'), home, jobsDir: join(home, 'jobs'), datasetsDir: join(home, 'datasets') };
  const ctx = {
    jobId: 'bench', spec: full, attempt: 1, resumeState: null, workDir, paths, signal: new AbortController().signal,
    log: () => undefined, progress: () => undefined, metrics: () => undefined, checkpoint: () => undefined, artifact: () => undefined,
    calls: { next: async () => null, reply: () => undefined },
  };
  const t0 = process.hrtime.bigint();
  await ensureEngineBackend();
  const policy = await openTrainablePolicy(full, ctx, null);
  const handle = await openEnvironment(full.environment, { paths, workDir, log: () => undefined, timeoutMs: 30_000 });
  const learner = await RlLearner.create({ ctx, spec: full, policy, env: handle.env, envId: 'math', resumeDir: null, lr: () => full.optim.lr, rng: new Prng(mixSeed(full.seed, 0x7a1)) });
  const cursor = new TaskCursor(handle.env.tasks.size('train'), full.seed);
  const stepSeconds = [];
  for (let step = 1; step <= o.steps; step++) {
    const ts = process.hrtime.bigint();
    const tasks = await Promise.all(cursor.next(full.batch_size).map(async (index) => ({ index, task: await handle.env.tasks.get('train', index) })));
    await learner.step(step, tasks);
    stepSeconds.push(secs(ts));
  }
  // What the job does after its last step: a validation and the final checkpoint.
  const testTasks = await Promise.all(Array.from({ length: full.val_batch_size }, async (_, index) => ({ index, task: await handle.env.tasks.get('test', index) })));
  await learner.validate(o.steps, testTasks, 'the final validation');
  await learner.save({ step: o.steps, total_steps: o.steps, cursor: cursor.state, cursor_start: 0, rng: new Prng(1).getState(), metrics: {}, sft_steps: 0, created: new Date().toISOString() });
  const total = secs(t0);
  learner.dispose();
  await handle.close();
  policy.dispose();
  return { stepSeconds, total };
}

async function service(home) {
  const { createApi, ensureAdmin } = dist('app.js');
  const { loadConfig } = dist('config/app-config.js');
  const key = 'otk_bench_admin_key_0123456789abcdef';
  const config = loadConfig({}, { home: join(home, 'server'), admin_key: key, cpu_slots: 1, gpus: 'none', log_level: 'error' });
  const app = await createApi({ config, worker: true, runnerEntry: join(root, 'dist', 'runner', 'job-runner.main.js'), root });
  await ensureAdmin(app);
  await app.getHttpAdapter().getInstance().ready();
  const call = async (method, url, body) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: body ? JSON.stringify(body) : undefined });
    return JSON.parse(res.body);
  };
  const t0 = process.hrtime.bigint();
  const job = await call('POST', '/v1/jobs', spec);
  let state = job;
  while (!['succeeded', 'failed', 'cancelled'].includes(state.state)) {
    await new Promise((r) => setTimeout(r, 100));
    state = await call('GET', `/v1/jobs/${job.id}`);
  }
  const total = secs(t0);
  if (state.state !== 'succeeded') throw new Error(`the job ${state.state}: ${state.error}`);
  const stepSeconds = (await call('GET', `/v1/jobs/${job.id}/metrics?name=timing/step_s`)).map((p) => p.value);
  await app.close();
  return { stepSeconds, total };
}

(async () => {
  const home = mkdtempSync(join(tmpdir(), 'ot-overhead-'));
  console.log(`${o.steps} RL steps × ${o.batch} tasks × ${o.rolloutN} samples (tiny-char, math equations); load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  try {
    const d = await direct(home);
    console.log(`direct : ${mean(d.stepSeconds.slice(1)).toFixed(3)} s/step (steps 2..${o.steps}), ${d.total.toFixed(1)} s in all (model init, steps, final validation and checkpoint)`);
    const s = await service(home);
    console.log(`service: ${mean(s.stepSeconds.slice(1)).toFixed(3)} s/step (the runner's timing/step_s), ${s.total.toFixed(1)} s from submit to succeeded (incl. queue, process start, final validation and checkpoint)`);
    const steady = mean(s.stepSeconds.slice(1)) / mean(d.stepSeconds.slice(1)) - 1;
    const endToEnd = s.total / d.total - 1;
    console.log(`overhead per step: ${(steady * 100).toFixed(1)} %; end to end: ${(endToEnd * 100).toFixed(1)} % (target < 10 %)`);
    const result = { date: new Date().toISOString(), options: o, cpus: cpus().length, loadavg: loadavg(), direct: d, service: s, overheadPerStep: steady, overheadEndToEnd: endToEnd };
    const dir = join(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `service-overhead-${result.date.slice(0, 10)}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
    console.log(`wrote ${file}`);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
