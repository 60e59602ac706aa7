#!/usr/bin/env node
'use strict';
/**
 * Auth under a flood of bad keys: a valid user's and the admin's `GET /v1/jobs` latency while 50
 * clients send random keys, and the server's rate of bad-key requests after 100,000 distinct ones.
 *
 * The server is the compiled one (`npm run build` first) of this checkout, or of `--root DIR`, started as
 * a child process with an operator-chosen admin key (stored with scrypt). Prints one JSON object on
 * stdout (progress goes to stderr), writes it to test/bench/results/, and exits 0 when every run of the
 * measured build meets the targets, 1 when one does not, 2 on an error. See test/bench/README.md.
 *
 *   node test/bench/auth.bench.js [--duration 20] [--clients 50] [--distinct 100000] [--distinct-timeout 180] [--root DIR]
 *                                 [--before DIR] [--rounds 1] [--out FILE | --no-out] [--cpu-prof DIR]
 *   --before DIR: also run the build in DIR (e.g. main's), alternating with this one, --rounds pairs
 */
const { spawn, execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const { crc32 } = require('node:zlib');
const { Conn } = require('./keepalive-client');
const { api, cpuDelta, cpuSnapshot, freePort, gitCommit } = require('./bench-support');

const REPO = resolve(__dirname, '..', '..');
const TARGETS = { p99_ms: 50, refused: 0 };
/** Each valid client waits this long between its requests (one in flight at a time). */
const VALID_PAUSE_MS = 20;
/** A bad-key client moves to a new source address after this many requests (the default failure limit). */
const REQUESTS_PER_ADDRESS = 20;

class UsageError extends Error {}

/** What to undo if the run is interrupted: the server and its temporary home. */
const cleanups = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    for (const undo of cleanups) await undo().catch(() => undefined);
    process.exit(2);
  });
}

function parseArgs(argv) {
  const o = {
    duration: 20,
    quiet: 5,
    clients: 50,
    distinct: 100_000,
    distinctTimeout: 180,
    after: 5,
    root: REPO,
    before: undefined,
    rounds: 1,
    out: undefined,
    write: true,
    cpuProf: undefined,
  };
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    const number = (name) => {
      const n = Number(value());
      if (!(n > 0)) throw new UsageError(`${name} must be a positive number`);
      return n;
    };
    switch (flag) {
      case '--duration':
        o.duration = number(flag);
        break;
      case '--quiet':
        o.quiet = number(flag);
        break;
      case '--clients':
        o.clients = number(flag);
        break;
      case '--distinct':
        o.distinct = number(flag);
        break;
      case '--distinct-timeout':
        o.distinctTimeout = number(flag);
        break;
      case '--after':
        o.after = number(flag);
        break;
      case '--rounds':
        o.rounds = number(flag);
        break;
      case '--root':
        o.root = resolve(value());
        break;
      case '--before':
        o.before = resolve(value());
        break;
      case '--out':
        o.out = resolve(value());
        break;
      case '--cpu-prof':
        o.cpuProf = resolve(value());
        break;
      case '--no-out':
        o.write = false;
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          readFileSync(__filename, 'utf8')
            .split('\n')
            .slice(3, 15)
            .map((l) => l.replace(/^ \*\/?\s?/, ''))
            .join('\n') + '\n',
        );
        process.exit(0);
        break;
      default:
        throw new UsageError(`Unknown option ${argv[i]} (try --help)`);
    }
  }
  return o;
}

const log = (line) => process.stderr.write(line + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const loadNow = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

function uptime() {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average: ${loadNow().join(', ')}`;
  }
}

// ---------------------------------------------------------------- keys

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(n) {
  let out = '';
  for (const b of randomBytes(n * 2)) if (b < 248 && out.length < n) out += BASE62[b % 62];
  return out.length === n ? out : out + base62(n - out.length);
}

/**
 * A random bad key, alternating two shapes: `otk_` + 43 base64url characters (a key issued before key
 * ids, or one an operator might choose) and the generated form `otk_<id>_<secret><CRC-32>` with a valid
 * checksum and an unknown id. Both pass any format check; only a lookup can refuse them.
 */
let shape = 0;
function bogusKey() {
  shape ^= 1;
  if (shape) return 'otk_' + randomBytes(32).toString('base64url');
  const body = `otk_${base62(12)}_${base62(43)}`;
  let n = crc32(body);
  let check = '';
  for (let i = 0; i < 6; i++) {
    check = BASE62[n % 62] + check;
    n = Math.floor(n / 62);
  }
  return body + check;
}

/** Source addresses for bad-key clients: 127.1.0.1, 127.1.0.2, … (all of 127/8 is the loopback). */
let nextAddress = 0;
function freshAddress() {
  nextAddress += 1;
  return `127.${1 + ((nextAddress >> 16) & 0x7f)}.${(nextAddress >> 8) & 255}.${nextAddress & 255}`;
}

// ---------------------------------------------------------------- client

// ---------------------------------------------------------------- server

async function startServer(root, home, port, adminKey, cpuProf) {
  const env = {};
  // Only our settings: an OPENTINKER_* variable in the caller's shell must not change what is measured.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_')) env[k] = v;
  Object.assign(env, {
    OPENTINKER_HOME: home,
    OPENTINKER_HOST: '127.0.0.1',
    OPENTINKER_PORT: String(port),
    OPENTINKER_LOG_LEVEL: 'warn',
    OPENTINKER_EMBEDDED_WORKER: 'false',
    OPENTINKER_GPUS: 'none',
  });
  if (adminKey) env.OPENTINKER_ADMIN_KEY = adminKey;
  const flags = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : [];
  const child = spawn(process.execPath, [...flags, join(root, 'bin', 'opentinker.js'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = async () => void child.kill('SIGKILL');
  cleanups.add(kill);
  child.once('exit', () => cleanups.delete(kill));
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
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  return {
    url,
    port,
    pid: child.pid,
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

// ---------------------------------------------------------------- load

function summary(latencies, statuses) {
  const s = Float64Array.from(latencies).sort();
  const at = (p) => (s.length ? Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] * 100) / 100 : null);
  const refused = Object.entries(statuses).reduce((n, [code, count]) => n + (code === '200' ? 0 : count), 0);
  return { requests: s.length, p50_ms: at(50), p99_ms: at(99), max_ms: at(100), refused, statuses };
}

/** A valid client: one `GET /v1/jobs` at a time, {@link VALID_PAUSE_MS} apart, until `stop()`. */
function validClient(port, key) {
  const conn = new Conn(port, { localAddress: '127.0.0.1' });
  const latencies = [];
  const statuses = {};
  let running = true;
  const done = (async () => {
    while (running) {
      const t0 = process.hrtime.bigint();
      let status;
      try {
        status = (await conn.request('GET', '/v1/jobs?limit=50', undefined, `Authorization: Bearer ${key}\r\n`)).status;
      } catch {
        status = 'error';
        conn.close();
      }
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      statuses[status] = (statuses[status] ?? 0) + 1;
      await sleep(VALID_PAUSE_MS);
    }
    conn.close();
  })();
  return {
    async stop() {
      running = false;
      await done;
      return summary(latencies, statuses);
    },
  };
}

/** `clients` connections sending bad keys back to back, each from a new address every {@link REQUESTS_PER_ADDRESS} requests, until `stop()` or `amount` requests. */
function floodClients(port, clients, amount = Infinity) {
  const statuses = {};
  let sent = 0;
  let answered = 0;
  let running = true;
  const one = async () => {
    let conn = null;
    let used = 0;
    while (running && sent < amount) {
      if (!conn || used >= REQUESTS_PER_ADDRESS) {
        conn?.close();
        conn = new Conn(port, { localAddress: freshAddress() });
        used = 0;
      }
      sent += 1;
      used += 1;
      let status;
      try {
        status = (await conn.request('GET', '/v1/jobs?limit=50', undefined, `Authorization: Bearer ${bogusKey()}\r\n`)).status;
      } catch {
        status = 'error';
        conn.close();
        conn = null;
      }
      answered += 1;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
    conn?.close();
  };
  const done = Promise.all(Array.from({ length: clients }, one));
  return {
    get answered() {
      return answered;
    },
    done,
    async stop() {
      running = false;
      await done;
      return { answered, statuses };
    },
  };
}

// ---------------------------------------------------------------- one run

async function run(build, root, order, o) {
  const base = mkdtempSync(join(os.tmpdir(), 'opentinker-auth-bench-'));
  const removeHome = async () => rmSync(base, { recursive: true, force: true });
  cleanups.add(removeHome);
  const home = join(base, 'flood');
  const adminKey = `otk_bench_operator_chose_${randomBytes(6).toString('hex')}`;
  const out = { build, order, root, commit: gitCommit(root), uptime_before: uptime() };
  let server;
  try {
    server = await startServer(root, home, await freePort(), adminKey, o.cpuProf);
    const user = (await api(server, adminKey, 'POST', '/v1/users', { name: 'bench-user' })).api_key.key;
    for (let i = 0; i < 25; i++) {
      await api(server, user, 'POST', '/v1/jobs', { kind: 'sleep', steps: 1, step_seconds: 0, name: `user-${i}` });
      await api(server, adminKey, 'POST', '/v1/jobs', { kind: 'sleep', steps: 1, step_seconds: 0, name: `admin-${i}` });
    }

    log(`[${build} ${order}] quiet: user and admin alone, ${o.quiet} s`);
    let valid = [validClient(server.port, user), validClient(server.port, adminKey)];
    await sleep(o.quiet * 1000);
    const [quietUser, quietAdmin] = await Promise.all(valid.map((c) => c.stop()));
    out.quiet = { user: quietUser, admin: quietAdmin };

    log(`[${build} ${order}] flood: ${o.clients} clients with random keys, ${o.duration} s`);
    const cpuA = cpuSnapshot(server.pid);
    const flood = floodClients(server.port, o.clients);
    await sleep(200);
    valid = [validClient(server.port, user), validClient(server.port, adminKey)];
    await sleep(o.duration * 1000);
    const [user1, admin1] = await Promise.all(valid.map((c) => c.stop()));
    const bogus = await flood.stop();
    const cpuB = cpuSnapshot(server.pid);
    out.flood = {
      user: user1,
      admin: admin1,
      bogus: { requests: bogus.answered, rps: Math.round(bogus.answered / (o.duration + 0.2)), statuses: bogus.statuses },
      cpu: cpuDelta(cpuA, cpuB),
      loadavg_after: loadNow(),
    };
    log(`  user p99 ${user1.p99_ms} ms (${user1.refused} refused), admin p99 ${admin1.p99_ms} ms (${admin1.refused} refused), bad keys ${out.flood.bogus.rps}/s`);
  } finally {
    await server?.stop();
  }

  // A fresh server and database, so the distinct keys are all it has seen; without an operator-chosen key, so that this
  // measures the limiter and the lookup alone (with one, a server that runs scrypt for bad keys spends
  // its time there, as the flood shows).
  try {
    server = await startServer(root, join(base, 'distinct'), await freePort(), undefined, o.cpuProf);
    log(`[${build} ${order}] ${o.distinct} distinct bad keys (at most ${o.distinctTimeout} s), then ${o.after} s more`);
    const t0 = process.hrtime.bigint();
    const first = floodClients(server.port, o.clients, o.distinct);
    const capped = await Promise.race([first.done.then(() => false), sleep(o.distinctTimeout * 1000).then(() => true)]);
    if (capped) await first.stop();
    const firstSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpuA = cpuSnapshot(server.pid);
    const after = floodClients(server.port, o.clients);
    await sleep(o.after * 1000);
    const more = await after.stop();
    const cpuB = cpuSnapshot(server.pid);
    out.distinct = {
      keys: first.answered,
      reached: !capped,
      first_rps: Math.round(first.answered / firstSeconds),
      after_rps: Math.round(more.answered / o.after),
      after_statuses: more.statuses,
      cpu_after: cpuDelta(cpuA, cpuB),
    };
    log(`  first ${first.answered}: ${out.distinct.first_rps} req/s; after: ${out.distinct.after_rps} req/s`);
  } finally {
    await server?.stop();
    await removeHome();
    cleanups.delete(removeHome);
  }
  out.uptime_after = uptime();
  out.checks = [
    ...['user', 'admin'].map((who) => ({
      target: `${who} p99 under the flood < ${TARGETS.p99_ms} ms`,
      actual: out.flood[who].p99_ms,
      pass: out.flood[who].p99_ms < TARGETS.p99_ms,
    })),
    ...['user', 'admin'].map((who) => ({
      target: `${who} requests refused under the flood = ${TARGETS.refused}`,
      actual: out.flood[who].refused,
      pass: out.flood[who].refused === TARGETS.refused,
    })),
  ];
  out.pass = out.checks.every((c) => c.pass);
  return out;
}

async function main() {
  const o = parseArgs(process.argv);
  const startedAt = new Date();
  const runs = [];
  const builds = o.before ? ['after', 'before'] : ['after'];
  let order = 0;
  for (let round = 0; round < o.rounds; round++) {
    for (const build of builds) runs.push(await run(build, build === 'after' ? o.root : o.before, ++order, o));
  }
  const measured = runs.filter((r) => r.build === 'after');
  const report = {
    benchmark: 'auth',
    date: startedAt.toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gib: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    settings: {
      flood_clients: o.clients,
      flood_seconds: o.duration,
      quiet_seconds: o.quiet,
      distinct_keys: o.distinct,
      distinct_timeout_s: o.distinctTimeout,
      distinct_server: 'a fresh server with a generated admin key (no operator-chosen key)',
      after_distinct_seconds: o.after,
      valid_pause_ms: VALID_PAUSE_MS,
      requests_per_bad_address: REQUESTS_PER_ADDRESS,
      route: 'GET /v1/jobs?limit=50 (50 jobs; the user sees 25, the admin 50)',
      admin_key: 'operator-chosen (OPENTINKER_ADMIN_KEY, stored with scrypt)',
      bad_keys: 'random, alternately otk_ + 43 base64url and the generated form with a valid checksum',
      targets: TARGETS,
    },
    runs,
    pass: measured.every((r) => r.pass),
  };
  if (o.write) {
    const file = o.out ?? join(__dirname, 'results', `auth-${startedAt.toISOString().slice(0, 10)}.json`);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    log(`results written to ${file}`);
  }
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exitCode = report.pass ? 0 : 1;
}

main().catch((e) => {
  process.stderr.write(`bench: ${e instanceof UsageError ? e.message : (e.stack ?? e)}\n`);
  process.exit(2);
});
