#!/usr/bin/env node
'use strict';
/**
 * Dispatch benchmark: what one scheduling look costs a worker with 1k, 10k and 100k queued jobs, on
 * SQLite and PostgreSQL, and whether the other users' jobs start while one user floods the queue.
 *
 * The code is the compiled one (`npm run build` first): the fair-share dispatcher (`FairDispatcher`)
 * on the jobs repository, on a migrated throw-away database, in this process. See test/bench/README.md.
 *
 *   node test/bench/dispatch.bench.js [--db sqlite,postgres] [--sizes 1000,10000,100000] [--users 10]
 *                                     [--iterations 200] [--warmup 20] [--root DIR] [--out FILE | --no-out]
 *                                     [--pg-url postgres://postgres@127.0.0.1:5432] [--pg-admin-db test]
 */
const { randomUUID } = require('node:crypto');
const { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { dirname, join, resolve } = require('node:path');
const { cpuDelta, cpuSnapshot } = require('./bench-support');

const REPO = resolve(__dirname, '..', '..');
/** The flooding user's running jobs: at `max_jobs_per_user`, as in the attack. */
const USER_LIMIT = 4;
/** Queued jobs of each other user. */
const OTHERS_QUEUED = 10;

// ---------------------------------------------------------------- options

class UsageError extends Error {}

function parseArgs(argv) {
  const opts = {
    db: ['sqlite', 'postgres'],
    sizes: [1000, 10_000, 100_000],
    users: 10,
    iterations: 200,
    warmup: 20,
    root: REPO,
    out: undefined,
    noOut: false,
    pgUrl: process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432',
    pgAdminDb: 'test',
  };
  const list = (v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (flag) {
      case '--db':
        opts.db = list(value());
        break;
      case '--sizes':
        opts.sizes = list(value()).map(Number);
        break;
      case '--users':
        opts.users = Number(value());
        break;
      case '--iterations':
        opts.iterations = Number(value());
        break;
      case '--warmup':
        opts.warmup = Number(value());
        break;
      case '--root':
        opts.root = resolve(value());
        break;
      case '--out':
        opts.out = resolve(value());
        break;
      case '--no-out':
        opts.noOut = true;
        break;
      case '--pg-url':
        opts.pgUrl = value().replace(/\/$/, '');
        break;
      case '--pg-admin-db':
        opts.pgAdminDb = value();
        break;
      case '--help':
        process.stdout.write(
          readFileSync(__filename, 'utf8')
            .split('\n')
            .slice(3, 12)
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
  for (const n of opts.sizes) if (!(n >= opts.users * OTHERS_QUEUED + 1)) throw new UsageError(`--sizes: each size must exceed ${opts.users * OTHERS_QUEUED}`);
  for (const k of ['users', 'iterations', 'warmup']) if (!(opts[k] > 0)) throw new UsageError(`--${k} must be a positive number`);
  return opts;
}

// ---------------------------------------------------------------- machine load

const loadNow = () => os.loadavg().map((x) => Math.round(x * 100) / 100);
const log = (line) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------- databases

async function openDatabase(kind, opts) {
  const { DataSource } = require(join(opts.root, 'node_modules', 'typeorm'));
  const { ENTITIES, MIGRATIONS } = require(join(opts.root, 'dist', 'database', 'data-source.js'));
  let options;
  let drop;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(os.tmpdir(), 'dispatch-bench-'));
    options = { type: 'better-sqlite3', database: join(dir, 'db.sqlite'), prepareDatabase: (db) => db.pragma('journal_mode = WAL') };
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const { Client } = require(join(opts.root, 'node_modules', 'pg'));
    const name = `opentinker_dispatch_bench_${process.pid}_${Date.now()}`;
    const admin = async (sql) => {
      const c = new Client({ connectionString: `${opts.pgUrl}/${opts.pgAdminDb}` });
      await c.connect();
      try {
        await c.query(sql);
      } finally {
        await c.end();
      }
    };
    await admin(`CREATE DATABASE "${name}"`);
    options = { type: 'postgres', url: `${opts.pgUrl}/${name}` };
    drop = () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
  const dataSource = new DataSource({ ...options, entities: ENTITIES, migrations: MIGRATIONS, logging: false });
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'all' });
  return { dataSource, drop };
}

/**
 * Users `alice` (the flood: every queued job but the others', `USER_LIMIT` running ones, and as many
 * finished jobs as the queue holds) and `user-1`… (`OTHERS_QUEUED` queued jobs each, and a past job
 * each), inserted with multi-row statements; PostgreSQL's statistics are then brought up to date.
 */
async function seed(dataSource, kind, size, users) {
  const names = ['alice', ...Array.from({ length: users - 1 }, (_, i) => `user-${i + 1}`)];
  const ids = Object.fromEntries(names.map((n) => [n, randomUUID()]));
  const p = (i) => (kind === 'postgres' ? `$${i}` : '?');
  await dataSource.query(
    `INSERT INTO users (id, name, role, created_at) VALUES ${names.map((_, i) => `(${p(i * 2 + 1)}, ${p(i * 2 + 2)}, 'user', 1)`).join(', ')}`,
    names.flatMap((n) => [ids[n], n]),
  );
  const t0 = Date.now() - size * 10;
  const rows = [];
  const row = (owner, state, at, startedAt = null) => rows.push([randomUUID(), ids[owner], state, at, startedAt]);
  for (let i = 0; i < USER_LIMIT; i++) row('alice', 'running', t0 - 1000 + i, t0);
  for (const n of names.slice(1)) row(n, 'succeeded', t0 - 2000, t0 - 1500);
  // A history as long as the queue: alice's finished jobs, older than everything queued.
  for (let i = 0; i < size; i++) row('alice', 'succeeded', t0 - size * 10 - 10_000 + i, t0 - size * 10 - 5_000 + i);
  const flood = size - (users - 1) * OTHERS_QUEUED;
  for (let i = 0; i < flood; i++) row('alice', 'queued', t0 + i * 10);
  // The others queued after most of the flood.
  for (const [k, n] of names.slice(1).entries()) for (let i = 0; i < OTHERS_QUEUED; i++) row(n, 'queued', t0 + flood * 5 + k * 100 + i);
  const columns =
    '(id, owner_id, kind, name, state, priority, admin_priority, environment_id, spec, resources, devices, worker_id, attempts, max_attempts, created_at, started_at, updated_at, version)';
  const CHUNK = 500;
  await dataSource.transaction(async (m) => {
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK);
      const values = [];
      const sql = chunk
        .map((r, k) => {
          const b = k * 7;
          values.push(r[0], r[1], r[2], r[2] === 'running' ? 'bench-worker' : null, r[3], r[4], r[3]);
          return `(${p(b + 1)}, ${p(b + 2)}, 'sleep', NULL, ${p(b + 3)}, 0, 0, NULL, '{"kind":"sleep","steps":1}', '{"gpus":0,"cpu_slots":1}', NULL, ${p(b + 4)}, 0, 1, ${p(b + 5)}, ${p(b + 6)}, ${p(b + 7)}, 0)`;
        })
        .join(', ');
      await m.query(`INSERT INTO jobs ${columns} VALUES ${sql}`, values);
    }
  });
  // PostgreSQL's autovacuum analyses a table after a bulk load; nothing runs ANALYZE on a server's SQLite file.
  if (kind === 'postgres') await dataSource.query('ANALYZE');
  return { ids, queued: flood + (users - 1) * OTHERS_QUEUED };
}

// ---------------------------------------------------------------- measuring

function summarize(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const q = (f) => s[Math.min(s.length - 1, Math.floor(f * s.length))];
  const r = (x) => Math.round(x * 1000) / 1000;
  return { n: s.length, mean_ms: r(s.reduce((a, b) => a + b, 0) / s.length), p50_ms: r(q(0.5)), p90_ms: r(q(0.9)), p99_ms: r(q(0.99)), max_ms: r(s[s.length - 1]) };
}

async function timed(iterations, warmup, once) {
  for (let i = 0; i < warmup; i++) await once();
  const ms = [];
  const a = cpuSnapshot();
  for (let i = 0; i < iterations; i++) {
    const t = process.hrtime.bigint();
    await once();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return { ...summarize(ms), ...cpuDelta(a, cpuSnapshot()), loadavg_after: loadNow() };
}

async function plan(dataSource, kind, sql) {
  const rows = await dataSource.query(kind === 'postgres' ? `EXPLAIN ${sql}` : `EXPLAIN QUERY PLAN ${sql}`);
  return rows.map((r) => r['QUERY PLAN'] ?? r.detail);
}

async function runOne(kind, size, opts) {
  const { JobsRepository } = require(join(opts.root, 'dist', 'jobs', 'jobs.repository.js'));
  const { FairDispatcher } = require(join(opts.root, 'dist', 'scheduler', 'fair-dispatcher.js'));
  const { DevicePool } = require(join(opts.root, 'dist', 'scheduler', 'device-pool.js'));
  const { dataSource, drop } = await openDatabase(kind, opts);
  try {
    const started = Date.now();
    const { ids, queued } = await seed(dataSource, kind, size, opts.users);
    log(`${kind} ${size}: seeded ${queued} queued jobs of ${opts.users} users in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const repo = new JobsRepository(dataSource, { usesPostgres: kind === 'postgres', values: { lease_seconds: 30 } });
    const dispatcher = new FairDispatcher(repo);
    const cpu = (n) => Array.from({ length: n }, (_, i) => ({ id: `cpu:${i}`, kind: 'cpu', name: 'CPU slot', memoryMb: null }));

    // The attack: a free slot, alice at her limit with the flood queued. The first claim must be another user's.
    const first = await dispatcher.claimNext({ workerId: 'bench-worker', pool: new DevicePool(cpu(1)), userLimit: USER_LIMIT });
    const check = { first_claim_owner: first && Object.keys(ids).find((n) => ids[n] === first.ownerId), passed: !!first && first.ownerId !== ids.alice };
    if (first) await repo.requeue(first, 'bench', { countAttempt: false });

    // One look with no free device: choose (heads, usage, order) and stop before claiming.
    const full = new DevicePool(cpu(1));
    full.take(['cpu:0']);
    const look = await timed(opts.iterations, opts.warmup, () => dispatcher.claimNext({ workerId: 'bench-worker', pool: full, userLimit: USER_LIMIT }));
    // One look that claims (the job is put back afterwards, untimed, so the queue keeps its length).
    let claimed;
    const claim = await timed(opts.iterations, opts.warmup, async () => {
      if (claimed) await repo.requeue(claimed, 'bench', { countAttempt: false });
      claimed = await dispatcher.claimNext({ workerId: 'bench-worker', pool: new DevicePool(cpu(1)), userLimit: USER_LIMIT });
      if (!claimed) throw new Error('nothing was claimed');
    });
    // The query a look costs most of, alone, and how the database runs it.
    const heads = await timed(opts.iterations, opts.warmup, () => repo.queueHeads());
    const headsSql = (await captureSql(dataSource, () => repo.queueHeads()))[0];
    // For comparison, the read the dispatcher before fair share made every look: the first 200 queued jobs,
    // whole rows, by priority then age (that code also missed every job past them).
    const windowSql = `SELECT * FROM "jobs" WHERE "state" = 'queued' ORDER BY "priority" DESC, "created_at" ASC, "id" ASC LIMIT 200`;
    const window = await timed(opts.iterations, opts.warmup, () => dataSource.query(windowSql));
    const row = {
      db: kind,
      queued,
      users: opts.users,
      check,
      look,
      claim,
      queue_heads: heads,
      queue_heads_plan: await plan(dataSource, kind, headsSql),
      window_200_before: window,
      window_200_plan: await plan(dataSource, kind, windowSql),
    };
    log(
      `${kind} ${String(size).padStart(6)} queued: look p50 ${look.p50_ms} ms p99 ${look.p99_ms}; claim p50 ${claim.p50_ms} ms p99 ${claim.p99_ms}; ` +
        `heads p50 ${heads.p50_ms} ms; the window read before p50 ${window.p50_ms} ms; first claim ${check.first_claim_owner} (${check.passed ? 'PASS' : 'FAIL'}); other cores ${look.other_cores}`,
    );
    return row;
  } finally {
    await dataSource.destroy().catch(() => undefined);
    await drop().catch((e) => log(`could not drop the ${kind} database: ${e.message}`));
  }
}

/** The SQL statements `work` sends. */
async function captureSql(dataSource, work) {
  const seen = [];
  const query = dataSource.query.bind(dataSource);
  dataSource.query = (sql, params, runner) => (seen.push(sql), query(sql, params, runner));
  try {
    await work();
  } finally {
    dataSource.query = query;
  }
  return seen;
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseArgs(process.argv);
  const machine = {
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model,
    memory_gib: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    loadavg_at_start: loadNow(),
  };
  log(`load average at start: ${machine.loadavg_at_start.join(', ')}`);
  const results = [];
  for (const db of opts.db) for (const size of opts.sizes) results.push(await runOne(db, size, opts));
  const report = {
    benchmark: 'dispatch',
    date: new Date().toISOString(),
    settings: { sizes: opts.sizes, users: opts.users, others_queued: OTHERS_QUEUED, user_limit: USER_LIMIT, iterations: opts.iterations, warmup: opts.warmup },
    machine: { ...machine, loadavg_at_end: loadNow() },
    results,
  };
  process.stdout.write(
    '\n| database | queued | look p50 / p99 ms | claim p50 / p99 ms | queue heads p50 ms | window of 200 before, p50 ms | other cores | B first |\n|---|--:|--:|--:|--:|--:|--:|---|\n',
  );
  for (const r of results) {
    process.stdout.write(
      `| ${r.db} | ${r.queued.toLocaleString('en')} | ${r.look.p50_ms} / ${r.look.p99_ms} | ${r.claim.p50_ms} / ${r.claim.p99_ms} | ${r.queue_heads.p50_ms} | ${r.window_200_before.p50_ms} | ${r.look.other_cores} | ${r.check.passed ? 'yes' : 'NO'} |\n`,
    );
  }
  if (!opts.noOut) {
    const out = opts.out ?? join(REPO, 'test', 'bench', 'results', `dispatch-${report.date.slice(0, 10)}.json`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
    log(`wrote ${out}`);
  }
  process.exitCode = results.every((r) => r.check.passed) ? 0 : 1;
}

main().catch((e) => {
  log(e instanceof UsageError ? e.message : e.stack);
  process.exitCode = 2;
});
