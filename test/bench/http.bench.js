#!/usr/bin/env node
'use strict';
/**
 * HTTP API benchmark: requests/second and latency for `GET /health` and an authenticated
 * `GET /v1/jobs?limit=50` with 1,000 jobs in the database, plus a correctness check that 1,000 job
 * submissions from 50 concurrent clients are all accepted, none lost or duplicated.
 *
 * The server is the compiled one (`npm run build` first), started as a child process
 * (`node bin/opentinker.js serve`) so that it and autocannon (in this process) each get a core.
 * See test/bench/README.md.
 *
 *   node test/bench/http.bench.js [--db sqlite,postgres] [--duration 10] [--warmup 2] [--connections 50]
 *                                 [--jobs 1000] [--root DIR] [--out FILE] [--bare] [--cpu-prof DIR]
 *                                 [--churn 50]   (also list while the listed jobs change: row updates/s)
 *                                 [--set cpu_slots=2]   (a server setting, OPENTINKER_<KEY>)
 */
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const autocannon = require('autocannon');
const { api, cpuDelta, cpuSnapshot, freePort, gitCommit } = require('./bench-support');

const REPO = resolve(__dirname, '..', '..');

const TARGETS = {
  health: { rps: 10_000, p99: 50 },
  list: { rps: 2_000, p99: 50 },
};

// ---------------------------------------------------------------- options

class UsageError extends Error {}

function parseArgs(argv) {
  const opts = {
    db: ['sqlite'],
    duration: 10,
    warmup: 2,
    connections: 50,
    jobs: 1000,
    root: REPO,
    out: undefined,
    bare: false,
    churn: 0,
    cpuProf: undefined,
    pgUrl: process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432',
    settings: {},
  };
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (flag) {
      case '--db':
        opts.db = value()
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
      case '--connections':
        opts.connections = Number(value());
        break;
      case '--jobs':
        opts.jobs = Number(value());
        break;
      case '--root':
        opts.root = resolve(value());
        break;
      case '--out':
        opts.out = resolve(value());
        break;
      case '--churn':
        opts.churn = Number(value());
        if (!(opts.churn >= 0)) throw new UsageError('--churn must be a number of row updates per second (0: off)');
        break;
      case '--bare':
        opts.bare = true;
        break;
      case '--cpu-prof':
        opts.cpuProf = resolve(value());
        break;
      case '--pg-url':
        opts.pgUrl = value();
        break;
      case '--set': {
        const [k, ...v] = value().split('=');
        opts.settings[`OPENTINKER_${k.toUpperCase()}`] = v.join('=');
        break;
      }
      case '-h':
      case '--help':
        process.stdout.write(
          readFileSync(__filename, 'utf8')
            .split('\n')
            .slice(3, 14)
            .map((l) => l.replace(/^ \*\/?\s?/, ''))
            .join('\n') + '\n',
        );
        process.exit(0);
        break;
      default:
        throw new UsageError(`Unknown option ${argv[i]} (try --help)`);
    }
  }
  for (const db of opts.db) if (db !== 'sqlite' && db !== 'postgres') throw new UsageError(`--db: unknown database ${db}`);
  for (const k of ['duration', 'warmup', 'connections', 'jobs']) {
    if (!(opts[k] > 0)) throw new UsageError(`--${k} must be a positive number`);
  }
  return opts;
}

// ---------------------------------------------------------------- machine load

function loadNow() {
  return os.loadavg().map((x) => Math.round(x * 100) / 100);
}

// ---------------------------------------------------------------- server

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startServer({ root, home, port, adminKey, databaseUrl, cpuProf, command, settings = {} }) {
  const env = {};
  // Only our settings: an OPENTINKER_* variable in the caller's shell must not change what is measured.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_')) env[k] = v;
  Object.assign(env, {
    OPENTINKER_HOME: home,
    OPENTINKER_HOST: '127.0.0.1',
    OPENTINKER_PORT: String(port),
    OPENTINKER_ADMIN_KEY: adminKey,
    OPENTINKER_LOG_LEVEL: 'warn',
    // Submitted jobs stay queued: no job-runner processes compete for the two cores.
    OPENTINKER_EMBEDDED_WORKER: 'false',
    OPENTINKER_GPUS: 'none',
  });
  if (databaseUrl) env.OPENTINKER_DATABASE_URL = databaseUrl;
  Object.assign(env, settings);
  const args = command ?? [...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : []), join(root, 'bin', 'opentinker.js'), 'serve'];
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  let exited = null;
  child.once('exit', (code, signal) => (exited = { code, signal }));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`server exited during start (${JSON.stringify(exited)}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`server did not answer /health within 60 s:\n${output}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  return {
    url,
    pid: child.pid,
    output: () => output,
    async stop() {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------- HTTP helpers

/** Every job the admin can see (id -> name), paged with limit=200; also counts ids listed twice. */
async function allJobIds(server, key) {
  const names = new Map();
  let listed = 0;
  let total = 0;
  for (let page = 1; ; page++) {
    const p = await api(server, key, 'GET', `/v1/jobs?limit=200&page=${page}`);
    total = p.total;
    for (const j of p.items) names.set(j.id, j.name);
    listed += p.items.length;
    if (p.items.length < 200) break;
  }
  return { ids: new Set(names.keys()), names, listed, duplicates: listed - names.size, total };
}

/**
 * Waits until the job count stops changing: a duration-bound autocannon run (the warm-up) ends with
 * requests in flight, which the server still completes (and commits) after the client has gone.
 */
async function settle(server, key) {
  let last = -1;
  let stableSince = Date.now();
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { total } = await api(server, key, 'GET', '/v1/jobs?limit=1');
    if (total !== last) {
      last = total;
      stableSince = Date.now();
    } else if (Date.now() - stableSince >= 1000) {
      return total;
    }
    await sleep(100);
  }
  return last;
}

// ---------------------------------------------------------------- autocannon

function cannon(opts) {
  return new Promise((res, rej) => {
    const inst = autocannon(opts, (err, result) => (err ? rej(err) : res(result)));
    void inst;
  });
}

function summarize(name, result, extra = {}, measuredSeconds) {
  // autocannon notices the end of an `amount` run only at its next 1 s tick: such runs pass their own time.
  const seconds = measuredSeconds ?? ((result.finish - result.start) / 1000 || result.duration);
  return {
    route: name,
    connections: result.connections,
    duration_s: Math.round(seconds * 100) / 100,
    requests: result.requests.total,
    rps: Math.round(result.requests.total / seconds),
    rps_mean_per_second_samples: result.requests.average,
    latency_ms: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.mean,
    },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    status_codes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([k, v]) => [k, v.count])),
    bytes_per_response: result.requests.total ? Math.round(result.throughput.total / result.requests.total) : 0,
    ...extra,
  };
}

/** Warm up, then measure one GET route for the configured duration. */
async function measureGet(name, server, path, headers, o) {
  const base = { url: server.url + path, headers, connections: o.connections };
  await cannon({ ...base, duration: o.warmup });
  const before = cpuSnapshot(server.pid);
  const result = await cannon({ ...base, duration: o.duration });
  const after = cpuSnapshot(server.pid);
  const cpu = cpuDelta(before, after);
  const row = summarize(name, result, { cpu, loadavg_after: loadNow() });
  // Requests per second of server CPU time: less sensitive than req/s to other processes taking the core.
  row.requests_per_server_cpu_second = cpu.server_cores > 0 ? Math.round(row.rps / cpu.server_cores) : null;
  log(
    `  ${name}: ${row.rps} req/s, p50 ${row.latency_ms.p50} ms, p99 ${row.latency_ms.p99} ms, ` +
      `errors ${row.errors}, non-2xx ${row.non2xx}; cores: server ${row.cpu.server_cores}, bench ${row.cpu.bench_cores}, other ${row.cpu.other_cores}`,
  );
  return row;
}

/** The submitted job; `name` tags which phase submitted it (warm-up, seed, checked run). */
const submitBody = (name) => JSON.stringify({ kind: 'sleep', steps: 1, step_seconds: 0, name });

/** `amount` POST /v1/jobs from `connections` concurrent connections; returns the stats and each response. */
async function submitMany(server, key, amount, connections, tag) {
  const responses = [];
  const t0 = process.hrtime.bigint();
  let last = t0;
  const result = await cannon({
    url: server.url,
    connections,
    amount,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/v1/jobs',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: submitBody(tag),
        onResponse: (status, body) => {
          last = process.hrtime.bigint();
          responses.push({ status, body });
        },
      },
    ],
  });
  return { result, responses, seconds: Number(last - t0) / 1e9 };
}

/**
 * The submission check: all accepted (201), each id answered once, and exactly those jobs new in the
 * database (found by paging GET /v1/jobs before and after), each carrying this run's tag as its name.
 */
async function submissionCheck(name, server, key, amount, connections, tag) {
  await settle(server, key);
  const before = await allJobIds(server, key);
  const cpuA = cpuSnapshot(server.pid);
  const { result, responses, seconds } = await submitMany(server, key, amount, connections, tag);
  const cpuB = cpuSnapshot(server.pid);
  await settle(server, key);
  const after = await allJobIds(server, key);

  const created = responses.filter((r) => r.status === 201);
  const returnedIds = [];
  let unparsable = 0;
  for (const r of created) {
    try {
      returnedIds.push(JSON.parse(r.body).id);
    } catch {
      unparsable++;
    }
  }
  const returned = new Set(returnedIds);
  const fresh = [...after.ids].filter((id) => !before.ids.has(id));
  const freshSet = new Set(fresh);
  const freshTagged = fresh.filter((id) => after.names.get(id) === tag);
  const lost = [...returned].filter((id) => !after.ids.has(id)).length; // answered 201 but not in the database
  const unexpected = fresh.filter((id) => !returned.has(id)).length; // in the database but never answered
  const check = {
    requested: amount,
    sent: result.requests.sent,
    responses: responses.length,
    status_201: created.length,
    other_statuses: Object.fromEntries(
      Object.entries(result.statusCodeStats)
        .filter(([s]) => s !== '201')
        .map(([s, v]) => [s, v.count]),
    ),
    errors: result.errors + result.timeouts,
    distinct_ids_returned: returned.size,
    duplicate_ids_returned: returnedIds.length - returned.size,
    unparsable_bodies: unparsable,
    jobs_before: before.total,
    jobs_after: after.total,
    new_jobs_in_db: fresh.length,
    new_jobs_with_tag: freshTagged.length,
    lost,
    unexpected_in_db: unexpected,
    listing_duplicates: after.duplicates,
    listing_matches_total: after.listed === after.total,
  };
  check.pass =
    check.sent === amount &&
    check.responses === amount &&
    check.status_201 === amount &&
    check.errors === 0 &&
    check.distinct_ids_returned === amount &&
    check.duplicate_ids_returned === 0 &&
    check.new_jobs_in_db === amount &&
    check.new_jobs_with_tag === amount &&
    freshSet.size === amount &&
    after.total - before.total === amount &&
    check.lost === 0 &&
    check.unexpected_in_db === 0 &&
    check.listing_duplicates === 0 &&
    check.listing_matches_total;
  const row = summarize(name, result, { cpu: cpuDelta(cpuA, cpuB), loadavg_after: loadNow(), check }, seconds);
  log(
    `  ${name}: ${row.requests} requests in ${row.duration_s} s (${row.rps} req/s), p99 ${row.latency_ms.p99} ms; ` +
      `201: ${check.status_201}/${amount}, new in db: ${check.new_jobs_in_db}, lost ${check.lost}, duplicated ${check.duplicate_ids_returned}, ` +
      `unexpected ${check.unexpected_in_db} -> ${check.pass ? 'ok' : 'MISMATCH'}`,
  );
  return row;
}

// ---------------------------------------------------------------- PostgreSQL

async function createPgDatabase(baseUrl) {
  const { Client } = require('pg');
  const name = `opentinker_bench_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: `${baseUrl}/postgres` });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    url: `${baseUrl}/${name}`,
    async drop() {
      const c = new Client({ connectionString: `${baseUrl}/postgres` });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

// ---------------------------------------------------------------- a list that changes

/**
 * A child process that changes the jobs the list shows, as running jobs do when they report progress:
 * `perSecond` row updates a second, round robin over the `ids` (the first page), each an UPDATE of the job's
 * progress and `updated_at` (epoch ms) that raises its `version` as the server's own updates do. It writes straight to the database
 * (the bench's jobs stay queued, so no runner would change them) from its own process, so neither the
 * server nor autocannon pays for the writes. Resolves with a stop function that returns the updates made.
 */
function startChurn({ databaseUrl, home, ids, perSecond }) {
  const script = `
    const ids = ${JSON.stringify(ids)};
    const every = ${1000 / perSecond};
    let n = 0;
    const progress = () => JSON.stringify({ step: n, total: null, message: 'bench churn' });
    const sqlite = ${JSON.stringify(databaseUrl ? null : join(home, 'opentinker.db'))};
    let write;
    if (sqlite) {
      const db = require(${JSON.stringify(require.resolve('better-sqlite3'))})(sqlite);
      db.pragma('busy_timeout = 5000');
      const st = db.prepare('UPDATE jobs SET progress = ?, version = version + 1, updated_at = ? WHERE id = ?');
      write = async (id) => st.run(progress(), Date.now(), id);
    } else {
      const { Client } = require(${JSON.stringify(require.resolve('pg'))});
      const c = new Client({ connectionString: ${JSON.stringify(databaseUrl ?? '')} });
      const ready = c.connect();
      write = async (id) => { await ready; await c.query('UPDATE jobs SET progress = $1, version = version + 1, updated_at = $2 WHERE id = $3', [progress(), Date.now(), id]); };
    }
    const start = Date.now();
    const tick = async () => {
      // Catch up to the wall clock, so a slow write does not lower the rate.
      while (n < Math.floor((Date.now() - start) / every) + 1) await write(ids[n++ % ids.length]);
      setTimeout(tick, every / 2);
    };
    void tick();
    process.on('message', () => { process.send(n); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return {
    stop: () =>
      new Promise((res) => {
        child.once('message', res);
        child.send('stop');
      }),
  };
}

/** {@link measureGet} of the list while the jobs of its first page change `perSecond` times a second in all. */
async function measureChangingList(name, server, key, o, databaseUrl, home) {
  const page = await api(server, key, 'GET', '/v1/jobs?limit=50');
  const churn = startChurn({ databaseUrl, home, ids: page.items.map((j) => j.id), perSecond: o.churn });
  const t0 = Date.now();
  let row;
  try {
    row = await measureGet(name, server, '/v1/jobs?limit=50', { authorization: `Bearer ${key}` }, o);
  } finally {
    const updates = await churn.stop();
    const seconds = (Date.now() - t0) / 1000;
    log(`    (${updates} job updates in ${seconds.toFixed(1)} s, warm-up included)`);
    // What the writer achieved, warm-up included: the requested rate is a target, not a measurement.
    if (row) row.churn = { updates, seconds: Math.round(seconds * 10) / 10 };
  }
  return row;
}

// ---------------------------------------------------------------- one database

async function runDatabase(db, o, cleanups) {
  log(`\n== ${db} ==`);
  const home = mkdtempSync(join(os.tmpdir(), 'opentinker-bench-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  let databaseUrl;
  if (db === 'postgres') {
    const pg = await createPgDatabase(o.pgUrl);
    cleanups.push(() => pg.drop());
    databaseUrl = pg.url;
  }
  const adminKey = `otk_bench_${randomBytes(24).toString('base64url')}`;
  const port = await freePort();
  const server = await startServer({ root: o.root, home, port, adminKey, databaseUrl, cpuProf: o.cpuProf, settings: o.settings });
  cleanups.push(() => server.stop());
  const auth = { authorization: `Bearer ${adminKey}` };
  const rows = [];
  const out = { database: db, rows, seed: null, bare: null, changing: null };

  // 1. GET /health (public).
  rows.push(await measureGet('GET /health', server, '/health', {}, o));

  // 2. Fill the database: o.jobs submissions from o.connections clients (cold server path), checked too.
  out.seed = await submissionCheck(`seed: POST /v1/jobs x${o.jobs} (cold)`, server, adminKey, o.jobs, o.connections, 'bench-seed');
  const page = await api(server, adminKey, 'GET', '/v1/jobs?limit=1');
  if (page.total !== o.jobs) throw new Error(`expected ${o.jobs} jobs after seeding, found ${page.total}`);

  // 3. Authenticated list with exactly o.jobs jobs in the database.
  rows.push(await measureGet(`GET /v1/jobs?limit=50 (${o.jobs} jobs)`, server, '/v1/jobs?limit=50', auth, o));

  // 3b. The same list while the jobs it shows keep changing (a second statement and fresh JSON per changed job).
  if (o.churn > 0) {
    const row = await measureChangingList(`GET /v1/jobs?limit=50 (${o.jobs} jobs, ${o.churn} listed-job updates/s)`, server, adminKey, o, databaseUrl, home);
    out.changing = row;
    rows.push(row);
  }

  // Optional reference point, on the same SQLite file with the same o.jobs jobs (WAL lets a second
  // process read; the API server is idle meanwhile): bare Fastify, no Nest, no TypeORM, same SQL.
  if (o.bare && db === 'sqlite') {
    const bare = await startServer({ command: [join(__dirname, 'bare-server.js')], home, port: await freePort(), adminKey });
    try {
      out.bare = [
        await measureGet('bare Fastify: GET /health', bare, '/health', {}, o),
        await measureGet(`bare Fastify+SQL: GET /v1/jobs?limit=50 (${o.jobs} jobs)`, bare, '/v1/jobs?limit=50', auth, o),
      ];
    } finally {
      await bare.stop();
    }
  }

  // 4. Submissions on a warmed-up server: warm up POST for o.warmup seconds, then the checked run.
  await cannon({
    url: `${server.url}/v1/jobs`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: submitBody('bench-warmup'),
    connections: o.connections,
    duration: o.warmup,
  });
  rows.push(await submissionCheck(`POST /v1/jobs x${o.jobs}`, server, adminKey, o.jobs, o.connections, 'bench-check'));

  await server.stop();
  return out;
}

// ---------------------------------------------------------------- report

function log(line) {
  process.stdout.write(line + '\n');
}

function table(rows) {
  const head = ['database', 'route', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'];
  const body = rows.map((r) => [r.database, r.route, String(r.rps), String(r.latency_ms.p50), String(r.latency_ms.p99), String(r.errors + r.timeouts), String(r.non2xx)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => '| ' + cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ') + ' |';
  return [line(head), '|' + widths.map((w, i) => (i >= 2 ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|', ...body.map(line)].join('\n');
}

function verdicts(run) {
  const out = [];
  const [health, list] = run.rows;
  const submit = run.rows[run.rows.length - 1];
  const label = run.database;
  const add = (name, target, actual, pass) => out.push({ database: label, target: name, required: target, actual, pass });
  add('GET /health req/s', `>= ${TARGETS.health.rps}`, health.rps, health.rps >= TARGETS.health.rps);
  add('GET /health p99', `< ${TARGETS.health.p99} ms`, `${health.latency_ms.p99} ms`, health.latency_ms.p99 < TARGETS.health.p99);
  add('GET /health errors', '0 errors, 0 non-2xx', `${health.errors + health.timeouts} errors, ${health.non2xx} non-2xx`, health.errors + health.timeouts + health.non2xx === 0);
  add('GET /v1/jobs req/s', `>= ${TARGETS.list.rps}`, list.rps, list.rps >= TARGETS.list.rps);
  add('GET /v1/jobs p99', `< ${TARGETS.list.p99} ms`, `${list.latency_ms.p99} ms`, list.latency_ms.p99 < TARGETS.list.p99);
  add('GET /v1/jobs errors', '0 errors, 0 non-2xx', `${list.errors + list.timeouts} errors, ${list.non2xx} non-2xx`, list.errors + list.timeouts + list.non2xx === 0);
  if (run.changing) {
    const c = run.changing;
    add('GET /v1/jobs (jobs changing) req/s', `>= ${TARGETS.list.rps}`, c.rps, c.rps >= TARGETS.list.rps);
    add('GET /v1/jobs (jobs changing) p99', `< ${TARGETS.list.p99} ms`, `${c.latency_ms.p99} ms`, c.latency_ms.p99 < TARGETS.list.p99);
  }
  for (const [name, row] of [
    ['submissions (cold, seed)', run.seed],
    ['submissions (warm)', submit],
  ]) {
    const c = row.check;
    add(
      `${name}: ${c.requested} from ${row.connections} clients`,
      'all 201, none lost or duplicated',
      `${c.status_201} x 201, ${c.new_jobs_in_db} new in db, ${c.lost} lost, ${c.duplicate_ids_returned} duplicated, ${c.unexpected_in_db} unexpected`,
      c.pass,
    );
  }
  return out;
}

// ---------------------------------------------------------------- main

async function main() {
  const o = parseArgs(process.argv);
  if (!existsSync(join(o.root, 'dist', 'cli', 'cli.js'))) {
    throw new Error(`${o.root}/dist is missing: run \`npm run build\` first`);
  }
  if (o.cpuProf) mkdirSync(o.cpuProf, { recursive: true });
  const startedAt = new Date();
  const machine = {
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model,
    memory_gib: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadavg_at_start: loadNow(),
  };
  log(`OpenTinker HTTP benchmark - ${startedAt.toISOString()}`);
  log(`root ${o.root} (commit ${gitCommit(o.root) ?? 'unknown'}); ${machine.cpus} CPUs (${machine.cpu_model}); node ${machine.node}`);
  log(`load average at start: ${machine.loadavg_at_start.join(', ')}`);
  log(`${o.connections} connections, warm-up ${o.warmup} s, measure ${o.duration} s, ${o.jobs} jobs; databases: ${o.db.join(', ')}`);

  const cleanups = [];
  const runs = [];
  let failure;
  const onSignal = (sig) => {
    failure = new Error(`interrupted by ${sig}`);
    void cleanup().finally(() => process.exit(130));
  };
  const cleanup = async () => {
    while (cleanups.length) {
      const fn = cleanups.pop();
      try {
        await fn();
      } catch (e) {
        process.stderr.write(`cleanup: ${e.message}\n`);
      }
    }
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const db of o.db) runs.push(await runDatabase(db, o, cleanups));
  } catch (e) {
    failure = e;
  } finally {
    await cleanup();
  }
  if (failure) throw failure;

  const rows = runs.flatMap((r) => [
    ...r.rows.map((row) => ({ database: r.database, ...row })),
    ...(r.bare ?? []).map((row) => ({ database: `${r.database} (reference)`, ...row })),
  ]);
  const checks = runs.flatMap(verdicts);
  log('\n' + table(rows));
  log('');
  for (const c of checks) log(`${c.pass ? 'PASS' : 'FAIL'}  [${c.database}] ${c.target}: ${c.actual} (target ${c.required})`);

  const report = {
    date: startedAt.toISOString(),
    commit: gitCommit(o.root),
    root: o.root,
    machine: { ...machine, loadavg_at_end: loadNow() },
    settings: {
      connections: o.connections,
      warmup_s: o.warmup,
      duration_s: o.duration,
      jobs: o.jobs,
      churn_updates_per_s: o.churn,
      embedded_worker: false,
      list_caller: 'admin (sees every job)',
      server_settings: o.settings,
      note: 'cpu.*_cores: average cores used during the measured interval by the server, by this process (autocannon) and by all other processes',
    },
    targets: TARGETS,
    runs,
    checks,
    pass: checks.every((c) => c.pass),
  };
  const out = o.out ?? join(__dirname, 'results', `${startedAt.toISOString().slice(0, 10)}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  log(`\nresults written to ${out}`);
  log(`overall: ${report.pass ? 'PASS' : 'FAIL'}`);
  process.exitCode = report.pass ? 0 : 1;
}

main().catch((e) => {
  process.stderr.write(`bench: ${e instanceof UsageError ? e.message : (e.stack ?? e)}\n`);
  process.exit(2);
});
