#!/usr/bin/env node
/**
 * Sandboxed Python runs per second (not a test). Build first:
 *   npx tsc -b environments/math-tool/tsconfig.json && node environments/math-tool/scripts/bench.js [runs] [concurrency...]
 * Runs a trivial program (`print(1+1)`) `runs` times at each concurrency (default 200 runs at 1, 2
 * and 4) and reports runs/s and latency percentiles, then the same through whole episodes
 * (reset + one code step + one answer step).
 */
const { parseConfig } = require('@opentinker/env-sdk');
const { PythonSandbox } = require('../dist/sandbox/index.js');
const mathTool = require('../dist/index.js').default;

const runs = Number(process.argv[2] ?? 200);
const levels = process.argv.length > 3 ? process.argv.slice(3).map(Number) : [1, 2, 4];

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function measure(label, concurrency, once) {
  const latencies = [];
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++;
        const s = process.hrtime.bigint();
        await once();
        latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  latencies.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(28)} concurrency ${String(concurrency).padStart(2)}: ${(runs / seconds).toFixed(1).padStart(6)} /s   ` +
      `p50 ${pct(latencies, 50).toFixed(1)} ms  p99 ${pct(latencies, 99).toFixed(1)} ms`,
  );
}

async function main() {
  for (const c of levels) {
    const sandbox = await PythonSandbox.create({ maxConcurrent: c });
    await measure('sandbox run print(1+1)', c, async () => {
      const r = await sandbox.run('print(1+1)');
      if (r.output.text !== '2\n') throw new Error(`unexpected output ${JSON.stringify(r)}`);
    });
    sandbox.close();
  }
  for (const c of levels) {
    const config = parseConfig(mathTool, { max_concurrent_runs: c, test_size: 10 });
    const instance = await mathTool.create(config, { workDir: '/tmp', log: () => {} });
    const task = await instance.tasks.get('test', 0);
    await measure('episode (code + answer)', c, async () => {
      const ep = instance.newEpisode();
      await ep.reset(task, 0);
      await ep.step('```python\nprint(6*7)\n```');
      const r = await ep.step(`\\boxed{${task.ground_truth}}`);
      if (r.reward !== 1) throw new Error('expected reward 1');
      await ep.close();
    });
    await instance.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
