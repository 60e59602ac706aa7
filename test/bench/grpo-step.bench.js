#!/usr/bin/env node
'use strict';
/**
 * One GRPO step at a real model size, end to end through a `train` job (the engine's issue: "one GRPO
 * step at 0.5B ≤ 10 minutes, measured through a train job"). The step as the engine's README defines it:
 * 32 math tasks × 8 samples × up to 128 new tokens, then the LoRA update (r8, all linears) on every
 * sampled sequence, on a random-weight bf16 checkpoint of Qwen2.5-0.5B's shape (a random model seldom
 * draws a stop token, so most rows sample all 128 tokens; the rewards are all 0, but every row is
 * trained all the same, as a GRPO step without group filtering does).
 *
 * The job runs in an in-process server (SQLite, embedded queue and worker, its job runner a child
 * process with the engine's threads), as `opentinker serve` runs it. Printed and written: the step's own
 * timings (`timing/rollout_s`, `timing/update_s`, `timing/step_s`), the job's submit-to-finish time,
 * what the step trained (rows, prompt and response lengths) and the machine's load and busy cores.
 *
 *   npm run build && node test/bench/grpo-step.bench.js [--shape qwen2.5-0.5b] [--batch 32] [--rollout-n 8]
 *     [--new 128] [--steps 1] [--out name.json]
 */
const { mkdtempSync, mkdirSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir, loadavg, availableParallelism } = require('node:os');
const { join } = require('node:path');
const { cpuDelta, cpuSnapshot, gitCommit } = require('./bench-support');
const { checkpoint } = require('../../libs/engine/bench/bench-process.cjs');

const root = join(__dirname, '..', '..');
const dist = (p) => require(join(root, 'dist', p));

function options(argv) {
  const o = { shape: 'qwen2.5-0.5b', batch: 32, rolloutN: 8, newTokens: 128, steps: 1, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const n = () => Number(argv[++i]);
    if (a === '--shape') o.shape = argv[++i];
    else if (a === '--batch') o.batch = n();
    else if (a === '--rollout-n') o.rolloutN = n();
    else if (a === '--new') o.newTokens = n();
    else if (a === '--steps') o.steps = n();
    else if (a === '--out') o.out = argv[++i];
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const load = () => loadavg().map((x) => round(x, 2));

async function main() {
  const o = options(process.argv.slice(2));
  process.env.OPENTINKER_ENGINE_THREADS ??= String(availableParallelism());
  const model = checkpoint(o.shape);
  const home = mkdtempSync(join(tmpdir(), 'ot-grpo-step-'));
  const spec = {
    kind: 'train',
    environment: { id: 'math' },
    model: { path: model, lora: { rank: 8, alpha: 16, target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] } },
    algorithm: { rollout_n: o.rolloutN },
    rollout: { max_new_tokens: o.newTokens },
    batch_size: o.batch,
    total_steps: o.steps,
    val_before_train: false,
    val_batch_size: 1,
    save_freq: 0,
  };
  const { createApi, ensureAdmin } = dist('app.js');
  const { loadConfig } = dist('config/app-config.js');
  const key = 'otk_bench_admin_key_0123456789abcdef';
  mkdirSync(join(home, 'server'), { recursive: true });
  const config = loadConfig(
    {},
    { home: join(home, 'server'), admin_key: key, cpu_slots: 1, gpus: 'none', log_level: 'error', engine_threads: process.env.OPENTINKER_ENGINE_THREADS, model_roots: model },
  );
  const app = await createApi({ config, worker: true, logger: ['error'] });
  await ensureAdmin(app);
  await app.getHttpAdapter().getInstance().ready();
  const send = async (method, url, body) => {
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: body ? JSON.stringify(body) : undefined,
    });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.body;
  };
  const call = async (method, url, body) => JSON.parse(await send(method, url, body));
  const started = new Date();
  const loadStart = load();
  const before = cpuSnapshot();
  console.log(
    `GRPO: ${o.steps} step(s) of ${o.batch} tasks × ${o.rolloutN} samples × up to ${o.newTokens} new tokens, LoRA r8 all linears, ${o.shape} (${model}), ` +
      `engine threads ${process.env.OPENTINKER_ENGINE_THREADS}; load ${loadStart.join(' ')}`,
  );
  let job = await call('POST', '/v1/jobs', spec);
  let lastLog = 0;
  while (!['succeeded', 'failed', 'cancelled'].includes(job.state)) {
    await new Promise((r) => setTimeout(r, 2000));
    job = await call('GET', `/v1/jobs/${job.id}`);
    const lines = (await send('GET', `/v1/jobs/${job.id}/logs`)).split('\n').filter(Boolean);
    for (const line of lines.slice(lastLog)) console.log(`  job: ${line}`);
    lastLog = lines.length;
  }
  const cpu = cpuDelta(before, cpuSnapshot());
  const loadEnd = load();
  if (job.state !== 'succeeded') throw new Error(`the job ${job.state}: ${job.error}`);
  const metric = async (name) => (await call('GET', `/v1/jobs/${job.id}/metrics?name=${encodeURIComponent(name)}`)).map((p) => round(p.value, 4));
  const names = ['timing/step_s', 'timing/rollout_s', 'timing/ref_s', 'timing/update_s', 'batch/rows_trained', 'response_length/mean', 'prompt_length/mean'];
  const steps = {};
  for (const name of names) steps[name] = await metric(name);
  await app.close();
  rmSync(home, { recursive: true, force: true });
  const result = {
    bench: 'grpo-step',
    started_at: started.toISOString(),
    commit: gitCommit(root),
    options: o,
    spec,
    steps,
    job_s: round((Date.parse(job.finished_at) - Date.parse(job.created_at)) / 1000, 1),
    load_start: loadStart,
    load_end: loadEnd,
    // Cores busy while the job ran: this process is the server; the job runner is one of the "others".
    cpu,
  };
  console.log(JSON.stringify(result.steps));
  console.log(
    `step ${steps['timing/step_s'].join(', ')} s (rollout ${steps['timing/rollout_s'].join(', ')}, update ${steps['timing/update_s'].join(', ')}); job ${result.job_s} s; load ${loadEnd.join(' ')}`,
  );
  const out = join(__dirname, 'results', o.out ?? `grpo-step-${started.toISOString().slice(0, 10)}.json`);
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${out}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
