#!/usr/bin/env node
'use strict';
/**
 * The quickstart as a benchmark (issue 5: steps/minute of the quickstart job and the split of time by
 * phase): runs `opentinker quickstart --json` in a fresh data folder, prints held-out accuracy before
 * and after RL, seconds per phase and steps per minute, and writes the summary with the machine's load
 * to results/quickstart-<date>[-tag].json.
 *
 *   npm run build && node test/bench/quickstart.bench.js            # the full quickstart (~10 min)
 *   node test/bench/quickstart.bench.js --quick --no-out            # a smoke run (seconds)
 *   node test/bench/quickstart.bench.js --seed 2 --tag seed2        # any quickstart option passes through
 *
 * Load from other processes slows every phase: the file records the load average at the start and end.
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const args = process.argv.slice(2);
const take = (flag) => {
  const i = args.indexOf(flag);
  if (i < 0) return undefined;
  const value = flag === '--no-out' ? true : args[i + 1];
  args.splice(i, flag === '--no-out' ? 1 : 2);
  return value;
};
const noOut = take('--no-out') === true;
const tag = take('--tag');

const root = path.join(__dirname, '..', '..');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'opentinker-quickstart-bench-'));
const loadStart = os.loadavg();
const t0 = Date.now();
const child = spawn(process.execPath, [path.join(root, 'bin', 'opentinker.js'), 'quickstart', '--json', ...args], {
  env: { ...process.env, OPENTINKER_HOME: home },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let stdout = '';
child.stdout.on('data', (d) => (stdout += d));
child.on('close', (code) => {
  const wall = (Date.now() - t0) / 1000;
  fs.rmSync(home, { recursive: true, force: true });
  if (code !== 0) {
    console.error(`quickstart exited with ${code}`);
    process.exit(1);
  }
  const summary = JSON.parse(stdout.trim().split('\n').pop());
  const pct = (v) => (v === null ? 'n/a' : `${(v * 100).toFixed(1)}%`);
  const s = summary.seconds;
  console.log(
    `held-out accuracy (${summary.eval_tasks} problems), greedy: SFT only ${pct(summary.accuracy_sft)} → SFT + GRPO ${pct(summary.accuracy_rl)} (${summary.gain_points >= 0 ? '+' : ''}${summary.gain_points} points)`,
  );
  console.log(
    `held-out accuracy, sampled at T=1: SFT only ${pct(summary.sampled_accuracy_sft)} → SFT + GRPO ${pct(summary.sampled_accuracy_rl)} (${summary.sampled_gain_points >= 0 ? '+' : ''}${summary.sampled_gain_points} points)`,
  );
  console.log(
    `seconds: server ${s.server}, SFT ${s.sft} (${summary.size.sftSteps} steps, ${summary.sft_steps_per_minute} steps/min), ` +
      `GRPO ${s.rl} (${summary.size.rlSteps} steps, ${summary.rl_steps_per_minute} steps/min), evaluation ${s.eval}, total ${s.total} (process ${wall.toFixed(1)})`,
  );
  const result = {
    date: new Date().toISOString(),
    args,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model,
    load_avg_start: loadStart,
    load_avg_end: os.loadavg(),
    process_seconds: Math.round(wall * 10) / 10,
    summary,
  };
  if (!noOut) {
    const dir = path.join(__dirname, 'results');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `quickstart-${result.date.slice(0, 10)}${tag ? `-${tag}` : ''}.json`);
    fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
  }
});
