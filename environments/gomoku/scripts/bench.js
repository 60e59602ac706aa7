#!/usr/bin/env node
/**
 * In-process step throughput of the gomoku environment (not a test). Build first:
 *   npx tsc -b environments/gomoku/tsconfig.json && node environments/gomoku/scripts/bench.js [games]
 * Plays `games` games per setting with a policy that picks a random legal cell (about 1 in 20 replies
 * is garbage, to exercise the invalid path), and reports steps/s over the step() calls alone and over
 * whole episodes (reset + steps), plus the result mix.
 */
const { parseConfig, createRng } = require('@opentinker/env-sdk');
const gomoku = require('../dist/index.js').default;

const games = Number(process.argv[2] ?? 10_000);
const settings = [
  { opponent: 'random' },
  { opponent: 'greedy' },
  { opponent: 'random', board_size: 15 },
  { opponent: 'greedy', board_size: 15 },
  { opponent: 'greedy', board_size: 19, model_first: false, random_opening_moves: 4 },
];

async function run(raw) {
  const config = parseConfig(gomoku, raw);
  const instance = await gomoku.create(config, { workDir: '/tmp', log: () => {} });
  const n = config.board_size;
  const policyRng = createRng(12345);
  const results = {};
  let steps = 0;
  let stepNs = 0n;
  const t0 = process.hrtime.bigint();
  for (let g = 0; g < games; g++) {
    const episode = instance.newEpisode();
    const task = await instance.tasks.get('train', g);
    episode.reset(task, g);
    const free = new Set(Array.from({ length: n * n }, (_, i) => i));
    for (const [r, c] of task.opening ?? []) free.delete(r * n + c);
    for (;;) {
      let action;
      if (policyRng.next() < 0.05) action = 'hmm, not sure';
      else {
        const cells = [...free];
        const cell = cells[policyRng.int(0, cells.length - 1)];
        action = `<move>${Math.floor(cell / n)},${cell % n}</move>`;
      }
      const s = process.hrtime.bigint();
      const result = episode.step(action);
      stepNs += process.hrtime.bigint() - s;
      steps++;
      const info = result.info;
      if (info.move) free.delete(info.move[0] * n + info.move[1]);
      if (info.opponent_move) free.delete(info.opponent_move[0] * n + info.opponent_move[1]);
      if (info.error === 'occupied') {
        // The opponent's move in reset (model_first false) is not tracked: forget that cell.
        const m = /<move>(\d+),(\d+)<\/move>/.exec(action);
        free.delete(Number(m[1]) * n + Number(m[2]));
      }
      if (result.done) {
        results[info.result] = (results[info.result] ?? 0) + 1;
        break;
      }
    }
    episode.close();
  }
  const totalS = Number(process.hrtime.bigint() - t0) / 1e9;
  const stepS = Number(stepNs) / 1e9;
  return {
    setting: JSON.stringify(raw),
    games,
    steps,
    'steps/s (step only)': Math.round(steps / stepS),
    'µs/step': Number(((stepS / steps) * 1e6).toFixed(1)),
    'steps/s (whole episodes)': Math.round(steps / totalS),
    'episodes/s': Math.round(games / totalS),
    results: JSON.stringify(results),
  };
}

(async () => {
  const rows = [];
  for (const raw of settings) rows.push(await run(raw));
  console.table(rows);
})();
