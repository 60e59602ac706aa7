#!/usr/bin/env node
'use strict';
/**
 * HTTP environment protocol benchmark: gomoku steps/s and math episodes/s through
 * `opentinker env serve` (one server process, 32 concurrent clients), side by side with the anchor,
 * OpenTinker's Python (FastAPI + uvicorn, 1 worker) gomoku server re-implemented for measurement in
 * test/bench/anchor/gomoku_fastapi_server.py. The same client drives both. See test/bench/README.md.
 *
 *   node test/bench/env-protocol.bench.js [--only NAME,...] [--duration 10] [--warmup 2] [--clients 32]
 *        [--python /usr/bin/python3] [--anchor-loop auto|asyncio|uvloop] [--anchor-http auto|h11|httptools]
 *        [--out FILE] [--no-out] [--cpu-prof DIR] [--list]
 *
 * Needs `npm run build` and `npx tsc -b environments/<id>/tsconfig.json` for gomoku and math first.
 * Scenario names (for --only): ours-gomoku-random, anchor-gomoku-random, ours-gomoku-greedy,
 * anchor-gomoku-upstream, anchor-gomoku-random-h11, ours-math. The anchor runs under uvicorn with one
 * worker and uvicorn's automatic choice (uvloop + httptools when installed, as `uvicorn[standard]`);
 * anchor-gomoku-random-h11 forces the pure-Python asyncio loop and h11 parser.
 */
const { spawn } = require('node:child_process');
const { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const { freePort } = require('./bench-support');
const { Conn } = require('./keepalive-client');

const REPO = resolve(__dirname, '..', '..');
const ANCHOR = join(__dirname, 'anchor', 'gomoku_fastapi_server.py');

/** The issue's quality bar (issue 3): gomoku through the protocol on 2 cores. */
const TARGETS = { gomoku_steps_per_s: 5000, gomoku_step_p99_ms: 20, times_anchor: 3 };

/** Gomoku settings shared by our server and the anchor: upstream's defaults (9×9, five in a row, 40 steps). */
const BOARD = 9;
const MAX_TURNS = 40;

const SCENARIOS = [
  {
    name: 'ours-gomoku-random',
    env: 'gomoku',
    server: 'ours',
    label: 'ours, gomoku, random opponent',
    config: { board_size: BOARD, win_length: 5, opponent: 'random', max_turns: MAX_TURNS },
    anchor: 'anchor-gomoku-random',
    targets: true,
  },
  { name: 'anchor-gomoku-random', env: 'gomoku', server: 'anchor', label: 'anchor (FastAPI), gomoku, random opponent', randomProb: 1.0 },
  {
    name: 'ours-gomoku-greedy',
    env: 'gomoku',
    server: 'ours',
    label: 'ours, gomoku, greedy opponent',
    config: { board_size: BOARD, win_length: 5, opponent: 'greedy', max_turns: MAX_TURNS },
    anchor: 'anchor-gomoku-upstream',
    targets: true,
  },
  {
    name: 'anchor-gomoku-upstream',
    env: 'gomoku',
    server: 'anchor',
    label: "anchor (FastAPI), gomoku, upstream's opponent (30% random, else win/block/score)",
    randomProb: 0.3,
  },
  {
    name: 'anchor-gomoku-random-h11',
    env: 'gomoku',
    server: 'anchor',
    label: 'anchor (FastAPI), gomoku, random opponent, pure-Python asyncio loop + h11 (plain `pip install uvicorn`)',
    randomProb: 1.0,
    loop: 'asyncio',
    http: 'h11',
  },
  { name: 'ours-math', env: 'math', server: 'ours', label: 'ours, math (synthetic), one step', config: {} },
];

// ---------------------------------------------------------------- options

function parseArgs(argv) {
  const opts = {
    only: null,
    duration: 10,
    warmup: 2,
    clients: 32,
    python: '/usr/bin/python3',
    anchorLoop: 'auto',
    anchorHttp: 'auto',
    out: undefined,
    write: true,
    cpuProf: undefined,
  };
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (flag) {
      case '--only':
        opts.only = value()
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        break;
      case '--duration':
        opts.duration = Number(value());
        break;
      case '--warmup':
        opts.warmup = Number(value());
        break;
      case '--clients':
        opts.clients = Number(value());
        break;
      case '--python':
        opts.python = value();
        break;
      case '--anchor-loop':
        opts.anchorLoop = value();
        break;
      case '--anchor-http':
        opts.anchorHttp = value();
        break;
      case '--out':
        opts.out = resolve(value());
        break;
      case '--no-out':
        opts.write = false;
        break;
      case '--cpu-prof':
        opts.cpuProf = resolve(value());
        break;
      case '--list':
        for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(24)} ${s.label}\n`);
        process.exit(0);
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          readFileSync(__filename, 'utf8')
            .split('\n')
            .slice(3, 18)
            .map((l) => l.replace(/^ \*\/?\s?/, ''))
            .join('\n') + '\n',
        );
        process.exit(0);
        break;
      default:
        throw new Error(`Unknown option ${argv[i]} (try --help)`);
    }
  }
  if (opts.only) for (const n of opts.only) if (!SCENARIOS.some((s) => s.name === n)) throw new Error(`--only: unknown scenario ${n} (try --list)`);
  return opts;
}

const log = (m) => process.stderr.write(`${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- machine load

/** Jiffies of the whole machine and of one process, to tell how busy the server and the others were. */
function cpuSnapshot(pid) {
  const snap = { at: process.hrtime.bigint(), self: process.cpuUsage(), busy: NaN, server: NaN };
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    snap.busy = f.slice(0, 8).reduce((a, b) => a + b, 0) - (f[3] + (f[4] || 0));
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    snap.server = Number(rest[11]) + Number(rest[12]);
  } catch {
    /* not Linux */
  }
  return snap;
}

const HZ = 100;
function cpuDelta(a, b) {
  const seconds = Number(b.at - a.at) / 1e9;
  const self = (b.self.user - a.self.user + b.self.system - a.self.system) / 1e6;
  const busy = (b.busy - a.busy) / HZ;
  const server = (b.server - a.server) / HZ;
  const r = (x) => Math.round((x / seconds) * 100) / 100;
  return {
    server_cores: Number.isFinite(server) ? r(server) : null,
    client_cores: r(self),
    other_cores: Number.isFinite(busy) ? r(Math.max(0, busy - self - (Number.isFinite(server) ? server : 0))) : null,
  };
}

const loadNow = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

// ---------------------------------------------------------------- measurement record

class Recorder {
  constructor() {
    this.measuring = false;
    this.steps = 0;
    this.episodes = 0;
    this.creates = 0;
    this.errors = 0;
    this.errorSamples = [];
    this.stepLat = [];
    this.createLat = [];
    this.deleteLat = [];
    this.episodeSteps = 0;
    this.results = {};
    this.rewardMismatches = 0;
  }

  error(what) {
    if (!this.measuring) return;
    this.errors++;
    if (this.errorSamples.length < 5) this.errorSamples.push(what);
  }
}

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function latencySummary(values) {
  const s = Float64Array.from(values).sort();
  const r = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : null;
  return { count: s.length, p50: r(percentile(s, 50)), p90: r(percentile(s, 90)), p99: r(percentile(s, 99)), max: r(s.length ? s[s.length - 1] : null), mean: r(mean) };
}

// ---------------------------------------------------------------- clients

/** Timed call; throws on a transport error; returns the parsed JSON (or null for an empty body). */
async function call(conn, rec, lat, method, path, body, expect) {
  const t0 = performance.now();
  const res = await conn.request(method, path, body);
  const ms = performance.now() - t0;
  if (res.status !== expect) {
    const e = new Error(`${method} ${path.replace(/[0-9a-f-]{32,36}/, ':id')} -> ${res.status} ${res.body.slice(0, 200)}`);
    e.status = res.status;
    throw e;
  }
  if (rec.measuring) lat.push(ms);
  return res.body ? JSON.parse(res.body) : null;
}

/** One simulated gomoku player: random legal moves from its own record of the board. */
async function gomokuClient(port, rec, state, id) {
  const conn = new Conn(port);
  const board = new Uint8Array(BOARD * BOARD);
  let seed = id * 1_000_003;
  let rnd = (id + 1) * 2654435761;
  const random = (n) => {
    rnd = (Math.imul(rnd ^ (rnd >>> 15), 2246822507) + 0x6d2b79f5) >>> 0;
    return rnd % n;
  };
  let episodeId = null;
  while (!state.stop) {
    try {
      board.fill(0);
      let free = board.length;
      seed++;
      const created = await call(conn, rec, rec.createLat, 'POST', '/v1/episodes', JSON.stringify({ split: 'train', index: seed, seed }), 201);
      episodeId = created.episode_id;
      if (rec.measuring) rec.creates++;
      let steps = 0;
      for (;;) {
        if (state.stop) break;
        let k = random(free);
        let cell = 0;
        for (; cell < board.length; cell++) if (board[cell] === 0 && k-- === 0) break;
        board[cell] = 1;
        free--;
        const r = await call(conn, rec, rec.stepLat, 'POST', `/v1/episodes/${episodeId}/step`, `{"action":"<move>${(cell / BOARD) | 0},${cell % BOARD}</move>"}`, 200);
        steps++;
        if (rec.measuring) rec.steps++;
        const reply = r.info && (r.info.opponent_move || r.info.env_move);
        if (reply) {
          const c = reply[0] * BOARD + reply[1];
          if (board[c] === 0) {
            board[c] = 2;
            free--;
          }
        }
        if (r.done) {
          if (rec.measuring) {
            const result = r.info.result || (r.info.winner === 'X' ? 'win' : r.info.winner === 'O' ? 'loss' : r.info.error || (r.info.draw ? 'draw' : 'other'));
            rec.results[result] = (rec.results[result] || 0) + 1;
          }
          break;
        }
        if (r.info && r.info.error) {
          // Our client never plays an occupied cell: an invalid-move answer means the boards disagree.
          rec.error(`invalid move answered: ${JSON.stringify(r.info).slice(0, 200)}`);
        }
      }
      if (state.stop) break;
      await call(conn, rec, rec.deleteLat, 'DELETE', `/v1/episodes/${episodeId}`, undefined, 204);
      episodeId = null;
      if (rec.measuring) {
        rec.episodes++;
        rec.episodeSteps += steps;
      }
    } catch (e) {
      rec.error(e.message);
      episodeId = null;
      if (!state.stop) await sleep(10);
    }
  }
  // Stopped mid-game: close it (after the measured window, so not counted).
  if (episodeId) await conn.request('DELETE', `/v1/episodes/${episodeId}`).catch(() => undefined);
  conn.close();
}

/** One simulated math solver: alternates a right and a wrong \boxed{} answer (single step). */
async function mathClient(port, rec, state, id, trainSize) {
  const conn = new Conn(port);
  let n = id;
  while (!state.stop) {
    try {
      n += state.clients;
      const index = trainSize ? n % trainSize : n;
      const created = await call(conn, rec, rec.createLat, 'POST', '/v1/episodes', JSON.stringify({ split: 'train', index, seed: n }), 201);
      if (rec.measuring) rec.creates++;
      const truth = groundTruth(created.task);
      const right = n % 2 === 0;
      const answer = right ? `So the final answer is \\boxed{${truth}}.` : `So the final answer is \\boxed{${truth}9}.`;
      const r = await call(conn, rec, rec.stepLat, 'POST', `/v1/episodes/${created.episode_id}/step`, JSON.stringify({ action: answer }), 200);
      if (rec.measuring) {
        rec.steps++;
        const result = r.reward === 1 ? 'correct' : 'wrong';
        rec.results[result] = (rec.results[result] || 0) + 1;
        if (right !== (r.reward === 1) || !r.done) rec.rewardMismatches++;
      }
      await call(conn, rec, rec.deleteLat, 'DELETE', `/v1/episodes/${created.episode_id}`, undefined, 204);
      if (rec.measuring) {
        rec.episodes++;
        rec.episodeSteps += 1;
      }
    } catch (e) {
      rec.error(e.message);
      if (!state.stop) await sleep(10);
    }
  }
  conn.close();
}

function groundTruth(task) {
  const g = task && task.ground_truth !== undefined ? task.ground_truth : task && task.reward_model ? task.reward_model.ground_truth : undefined;
  if (typeof g === 'string' || typeof g === 'number') return String(g);
  if (g && typeof g === 'object') return String(g.ground_truth ?? g.answer ?? g.target ?? '');
  return '';
}

// ---------------------------------------------------------------- servers

/** Starts a server; its output goes to a file so that reading it costs this process nothing. */
async function startServer(scenario, opts, dir) {
  const port = await freePort();
  const logFile = join(dir, `${scenario.name}.log`);
  const fd = openSync(logFile, 'w');
  let command;
  let args;
  if (scenario.server === 'ours') {
    const pkg = join(REPO, 'environments', scenario.env);
    command = process.execPath;
    args = [
      ...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`, `--cpu-prof-name=${scenario.name}.cpuprofile`] : []),
      join(REPO, 'bin', 'opentinker.js'),
      'env',
      'serve',
      pkg,
      '--port',
      String(port),
      '--config',
      JSON.stringify(scenario.config),
    ];
  } else {
    command = opts.python;
    args = [
      ANCHOR,
      '--port',
      String(port),
      '--board_size',
      String(BOARD),
      '--max_total_steps',
      String(MAX_TURNS),
      '--opponent-random-prob',
      String(scenario.randomProb),
      '--loop',
      scenario.loop ?? opts.anchorLoop,
      '--http',
      scenario.http ?? opts.anchorHttp,
    ];
  }
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_')) env[k] = v;
  env.PYTHONUNBUFFERED = '1';
  const child = spawn(command, args, { env, stdio: ['ignore', fd, fd], cwd: REPO });
  closeSync(fd);
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  const output = () => readFileSync(logFile, 'utf8').slice(0, 4000);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`${scenario.name}: server exited during start (${JSON.stringify(exited)}):\n${output()}`);
    if (Date.now() > deadline) throw new Error(`${scenario.name}: no answer on /health within 60 s:\n${output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      if (res.ok) break;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  const info = await (await fetch(`http://127.0.0.1:${port}/v1/info`)).json();
  return {
    port,
    pid: child.pid,
    info,
    banner:
      output()
        .split('\n')
        .find((l) => l.startsWith('ANCHOR READY') || l.startsWith('Environment ')) || '',
    async stop() {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------- a run

async function runScenario(scenario, opts, dir) {
  const server = await startServer(scenario, opts, dir);
  log(`\n${scenario.label}: ${server.banner.trim()} (port ${server.port}, pid ${server.pid})`);
  const rec = new Recorder();
  const state = { stop: false, clients: opts.clients };
  const trainSize = server.info.tasks ? server.info.tasks.train : null;
  const clients = [];
  for (let i = 0; i < opts.clients; i++) {
    clients.push(scenario.env === 'math' ? mathClient(server.port, rec, state, i, trainSize) : gomokuClient(server.port, rec, state, i));
  }
  await sleep(opts.warmup * 1000);
  const before = cpuSnapshot(server.pid);
  const t0 = performance.now();
  rec.measuring = true;
  await sleep(opts.duration * 1000);
  rec.measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  const after = cpuSnapshot(server.pid);
  state.stop = true;
  await Promise.all(clients);
  const open = await (await fetch(`http://127.0.0.1:${server.port}/health`)).json().catch(() => ({}));
  await server.stop();

  const cpu = cpuDelta(before, after);
  const stepsPerS = rec.steps / seconds;
  const row = {
    scenario: scenario.name,
    label: scenario.label,
    env: scenario.env,
    server: scenario.server,
    banner: server.banner.trim(),
    config: scenario.server === 'ours' ? scenario.config : { board_size: BOARD, win_length: 5, max_total_steps: MAX_TURNS, opponent_random_prob: scenario.randomProb },
    clients: opts.clients,
    duration_s: Math.round(seconds * 100) / 100,
    steps: rec.steps,
    episodes: rec.episodes,
    steps_per_s: Math.round(stepsPerS),
    episodes_per_s: Math.round((rec.episodes / seconds) * 10) / 10,
    mean_steps_per_episode: rec.episodes ? Math.round((rec.episodeSteps / rec.episodes) * 100) / 100 : null,
    http_requests_per_s: Math.round((rec.steps + rec.creates + rec.episodes) / seconds),
    step_latency_ms: latencySummary(rec.stepLat),
    create_latency_ms: latencySummary(rec.createLat),
    delete_latency_ms: latencySummary(rec.deleteLat),
    errors: rec.errors,
    error_samples: rec.errorSamples,
    results: rec.results,
    ...(scenario.env === 'math' ? { reward_mismatches: rec.rewardMismatches } : {}),
    episodes_left_open_at_stop: open.episodes ?? null,
    cpu,
    steps_per_server_cpu_s: cpu.server_cores ? Math.round(stepsPerS / cpu.server_cores) : null,
    loadavg_after: loadNow(),
  };
  log(
    `  ${row.steps_per_s} steps/s, ${row.episodes_per_s} episodes/s (${row.mean_steps_per_episode} steps each), ` +
      `step p50 ${row.step_latency_ms.p50} ms p99 ${row.step_latency_ms.p99} ms, errors ${row.errors}; ` +
      `cores: server ${cpu.server_cores}, client ${cpu.client_cores}, others ${cpu.other_cores}`,
  );
  if (row.error_samples.length) log(`  errors: ${row.error_samples.join(' | ')}`);
  return row;
}

// ---------------------------------------------------------------- checks and report

function checks(rows) {
  const by = Object.fromEntries(rows.map((r) => [r.scenario, r]));
  const out = [];
  for (const s of SCENARIOS) {
    const r = by[s.name];
    if (!r || !s.targets) continue;
    out.push({ check: `${s.name}: steps/s >= ${TARGETS.gomoku_steps_per_s}`, value: r.steps_per_s, pass: r.steps_per_s >= TARGETS.gomoku_steps_per_s });
    out.push({
      check: `${s.name}: step p99 < ${TARGETS.gomoku_step_p99_ms} ms`,
      value: r.step_latency_ms.p99,
      pass: r.step_latency_ms.p99 !== null && r.step_latency_ms.p99 < TARGETS.gomoku_step_p99_ms,
    });
    out.push({ check: `${s.name}: no errors`, value: r.errors, pass: r.errors === 0 });
    const a = by[s.anchor];
    if (a && a.steps_per_s > 0) {
      const ratio = Math.round((r.steps_per_s / a.steps_per_s) * 10) / 10;
      out.push({ check: `${s.name}: steps/s >= ${TARGETS.times_anchor}x ${s.anchor}`, value: ratio, pass: ratio >= TARGETS.times_anchor });
      // The same ratio per second of server CPU time: steadier when other processes take the cores.
      if (r.steps_per_server_cpu_s && a.steps_per_server_cpu_s) {
        const cpuRatio = Math.round((r.steps_per_server_cpu_s / a.steps_per_server_cpu_s) * 10) / 10;
        out.push({ check: `${s.name}: steps per server CPU second >= ${TARGETS.times_anchor}x ${s.anchor}`, value: cpuRatio, pass: cpuRatio >= TARGETS.times_anchor });
      }
    }
  }
  const m = by['ours-math'];
  if (m) {
    out.push({
      check: `ours-math: step p99 < ${TARGETS.gomoku_step_p99_ms} ms`,
      value: m.step_latency_ms.p99,
      pass: m.step_latency_ms.p99 !== null && m.step_latency_ms.p99 < TARGETS.gomoku_step_p99_ms,
    });
    out.push({ check: 'ours-math: no errors, rewards as expected', value: m.errors + m.reward_mismatches, pass: m.errors === 0 && m.reward_mismatches === 0 });
  }
  return out;
}

function table(rows) {
  const head = ['scenario', 'steps/s', 'episodes/s', 'steps/ep', 'step p50 ms', 'step p99 ms', 'errors', 'server cores', 'steps/server-cpu-s', 'other cores'];
  const body = rows.map((r) =>
    [
      r.scenario,
      r.steps_per_s,
      r.episodes_per_s,
      r.mean_steps_per_episode,
      r.step_latency_ms.p50,
      r.step_latency_ms.p99,
      r.errors,
      r.cpu.server_cores,
      r.steps_per_server_cpu_s,
      r.cpu.other_cores,
    ].map(String),
  );
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ') + ' |';
  return [line(head), '|' + w.map((x, i) => (i === 0 ? '-'.repeat(x + 2) : '-'.repeat(x + 1) + ':')).join('|') + '|', ...body.map(line)].join('\n');
}

function pythonVersions(python) {
  return new Promise((res) => {
    const c = spawn(python, ['-c', 'import sys,fastapi,pydantic,uvicorn;print(sys.version.split()[0],fastapi.__version__,pydantic.VERSION,uvicorn.__version__)'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let o = '';
    c.stdout.on('data', (d) => (o += d));
    c.on('error', () => res(null));
    c.on('exit', (code) => {
      if (code !== 0) return res(null);
      const [py, fastapi, pydantic, uvicorn] = o.trim().split(' ');
      res({ python: py, fastapi, pydantic, uvicorn });
    });
  });
}

async function main() {
  const opts = parseArgs(process.argv);
  if (!existsSync(join(REPO, 'dist', 'cli', 'cli.js'))) throw new Error('Run `npm run build` first (dist/cli/cli.js is missing).');
  const skipped = [];
  let scenarios = SCENARIOS.filter((s) => !opts.only || opts.only.includes(s.name));
  for (const envId of ['gomoku', 'math']) {
    const pkg = join(REPO, 'environments', envId);
    const why = !existsSync(join(pkg, 'src', 'index.ts'))
      ? `environments/${envId}/src/index.ts does not exist`
      : !existsSync(join(pkg, 'dist', 'index.js'))
        ? `environments/${envId} is not built (npx tsc -b environments/${envId}/tsconfig.json)`
        : null;
    if (why) {
      for (const s of scenarios.filter((x) => x.env === envId && x.server === 'ours')) skipped.push({ scenario: s.name, why });
      scenarios = scenarios.filter((x) => !(x.env === envId && x.server === 'ours'));
    }
  }
  const py = scenarios.some((s) => s.server === 'anchor') ? await pythonVersions(opts.python) : null;
  if (scenarios.some((s) => s.server === 'anchor') && !py) {
    for (const s of scenarios.filter((x) => x.server === 'anchor'))
      skipped.push({ scenario: s.name, why: `${opts.python} lacks fastapi/uvicorn (apt-get install python3-fastapi python3-uvicorn)` });
    scenarios = scenarios.filter((x) => x.server !== 'anchor');
  }
  for (const s of skipped) log(`skipped ${s.scenario}: ${s.why}`);
  if (opts.cpuProf) mkdirSync(opts.cpuProf, { recursive: true });

  const dir = mkdtempSync(join(os.tmpdir(), 'opentinker-env-bench-'));
  const startedAt = new Date();
  const loadBefore = loadNow();
  log(`env-protocol bench: ${opts.clients} clients, ${opts.warmup} s warm-up + ${opts.duration} s per scenario; load average ${loadBefore.join(' ')} on ${os.cpus().length} cores`);
  const rows = [];
  try {
    for (const s of scenarios) rows.push(await runScenario(s, opts, dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const results = checks(rows);
  const report = {
    benchmark: 'env-protocol',
    date: startedAt.toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0] && os.cpus()[0].model,
      memory_gib: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.type()} ${os.release()}`,
      loadavg_before: loadBefore,
      loadavg_after: loadNow(),
    },
    anchor_stack: py,
    settings: {
      clients: opts.clients,
      duration_s: opts.duration,
      warmup_s: opts.warmup,
      anchor_loop: opts.anchorLoop,
      anchor_http: opts.anchorHttp,
      board_size: BOARD,
      max_turns: MAX_TURNS,
    },
    targets: TARGETS,
    skipped,
    rows,
    checks: results,
    pass: results.length > 0 && results.every((c) => c.pass),
  };
  process.stdout.write(`\n${table(rows)}\n\n`);
  for (const c of results) process.stdout.write(`${c.pass ? 'PASS' : 'FAIL'}  ${c.check} (${c.value})\n`);
  for (const s of skipped) process.stdout.write(`SKIP  ${s.scenario}: ${s.why}\n`);
  const contended = rows.filter((r) => r.cpu.other_cores !== null && r.cpu.other_cores > 0.3);
  if (contended.length) {
    process.stdout.write(
      `\nNOTE  other processes used more than 0.3 of the 2 cores during: ${contended.map((r) => `${r.scenario} (${r.cpu.other_cores})`).join(', ')}; ` +
        'compare steps/server-cpu-s, or rerun on a quiet machine.\n',
    );
  }
  if (opts.write) {
    const out = opts.out ?? join(__dirname, 'results', `env-protocol-${startedAt.toISOString().slice(0, 10)}.json`);
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`\nResults written to ${out}\n`);
  }
  process.exitCode = report.pass ? 0 : 1;
}

main().catch((e) => {
  log(e.stack || String(e));
  process.exit(2);
});
