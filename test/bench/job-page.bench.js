#!/usr/bin/env node
'use strict';
/**
 * What one `GET /v1/jobs?limit=50` page costs its reader thread, in this process (no HTTP, no threads):
 *
 * - `read + serialise`: the API thread's fallback — 50 rows read in full, written by serializeJobPage;
 * - `kept, none changed`: JobPageWriter when every listed job's JSON is kept (what http.bench.js
 *   measures: nothing runs the benchmark's jobs, so no row changes during its list step);
 * - `kept, 1 changed`: one listed job updated (untimed) before each page: its JSON is read and written again;
 * - `nothing kept`: a fresh JobPageWriter per page (every listed job read in full): the worst case.
 *
 *   npm run build && node test/bench/job-page.bench.js [--db sqlite,postgres] [--pages 3000] [--out FILE]
 *
 * PostgreSQL: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432) names the server; a database is
 * created and dropped.
 */
const { mkdtempSync, rmSync, writeFileSync, mkdirSync } = require('node:fs');
const { tmpdir, cpus, loadavg } = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const dist = (p) => require(join(root, 'dist', p));

const o = { db: ['sqlite'], pages: 3000, out: null, pgUrl: process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432' };
for (let i = 2; i < process.argv.length; i += 2) {
  const [k, v] = [process.argv[i], process.argv[i + 1]];
  if (k === '--db') o.db = v.split(',');
  else if (k === '--pages') o.pages = Number(v);
  else if (k === '--out') o.out = v;
  else throw new Error(`unknown option ${k}`);
}

const JOBS = 1000;
const T = 1_764_700_000_000;

async function open(kind) {
  const { DataSource } = require('typeorm');
  const { ENTITIES, MIGRATIONS } = dist('core/database/data-source.js');
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'job-page-bench-'));
    const options = { type: 'better-sqlite3', database: join(dir, 'db.sqlite') };
    return { options, drop: async () => rmSync(dir, { recursive: true, force: true }), DataSource, ENTITIES, MIGRATIONS };
  }
  const { Client } = require('pg');
  const name = `opentinker_page_bench_${process.pid}`;
  const admin = async (sql) => {
    const c = new Client({ connectionString: `${o.pgUrl}/postgres` });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  return { options: { type: 'postgres', url: `${o.pgUrl}/${name}` }, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), DataSource, ENTITIES, MIGRATIONS };
}

async function otherConnection(kind, options) {
  if (kind === 'sqlite') {
    const Database = require('better-sqlite3');
    const c = new Database(options.database);
    return { update: async (sql) => c.prepare(sql).run(), close: async () => c.close() };
  }
  const { Client } = require('pg');
  const c = new Client({ connectionString: options.url });
  await c.connect();
  return { update: (sql) => c.query(sql), close: () => c.end() };
}

async function measure(kind) {
  const d = await open(kind);
  const db = new d.DataSource({ ...d.options, entities: d.ENTITIES, migrations: d.MIGRATIONS, logging: false });
  await db.initialize();
  try {
    await db.runMigrations({ transaction: 'all' });
    await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'admin', 1)`);
    const { JobsRepository } = dist('jobs/jobs.repository.js');
    const { JobEntity } = dist('jobs/job.entity.js');
    const { JobListSql } = dist('jobs/job-list.sql.js');
    const { JobPageWriter } = dist('jobs/job-page.writer.js');
    const { serializeJobPage } = dist('jobs/job-page.serializer.js');
    const repo = new JobsRepository(db, { usesPostgres: kind === 'postgres', values: { lease_seconds: 30 } });
    for (let n = 1; n <= JOBS; n++) {
      await repo.insert(
        Object.assign(new JobEntity(), {
          id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, ownerId: 'u1', kind: 'sleep', name: `bench-${n}`,
          state: n % 3 ? 'succeeded' : 'queued', priority: 0, environmentId: null, spec: { kind: 'sleep', steps: 1, step_seconds: 0 },
          resources: { gpus: 0, cpu_slots: 1 }, devices: n % 3 ? ['cpu:0'] : null, workerId: n % 3 ? 'worker-1' : null, attempts: n % 3 ? 1 : 0,
          maxAttempts: 3, error: null, exitCode: n % 3 ? 0 : null, progress: n % 3 ? { step: 1, total: 1, message: null } : null,
          resumeState: null, cancelRequestedAt: null, leaseExpiresAt: null, createdAt: T + n, startedAt: n % 3 ? T + n : null,
          finishedAt: n % 3 ? T + n + 5 : null, updatedAt: T + n,
        }),
      );
    }
    const driver = db.driver;
    const sql = new JobListSql(kind === 'postgres' ? { pg: driver.master } : { sqlite: driver.databaseConnection });
    const q = { limit: 50, offset: 0 };
    let warm;
    let touched = 0;
    // Before each page of `kept, 1 changed`, untimed: one listed job's row is updated (the trigger raises its
    // version) on another connection, as the API's writes reach a reader thread's connection.
    const writer = await otherConnection(kind, d.options);
    const touch = () => writer.update(`UPDATE "jobs" SET "priority" = "priority" WHERE "id" = '00000000-0000-4000-8000-${String(JOBS - (touched++ % 50)).padStart(12, '0')}'`);
    const cases = {
      'read + serialise': { run: async () => Buffer.from(serializeJobPage({ ...(await sql.list(q)), page: 1, limit: 50 })) },
      'kept, none changed': { run: () => warm.page(q, 1, 50) },
      'kept, 1 changed': { before: touch, run: () => warm.page(q, 1, 50) },
      'nothing kept': { run: () => new JobPageWriter(sql).page(q, 1, 50) },
    };
    const expected = (await cases['read + serialise'].run()).toString();
    const rows = [];
    for (const [name, { before, run }] of Object.entries(cases)) {
      warm = new JobPageWriter(sql);
      await warm.page(q, 1, 50);
      let ns = 0n;
      for (let i = -Math.min(300, o.pages); i < o.pages; i++) {
        if (before) await before();
        const t0 = process.hrtime.bigint();
        const body = await run();
        if (i >= 0) ns += process.hrtime.bigint() - t0;
        if (i === -1 && !before && body.toString() !== expected) throw new Error(`${name}: bytes differ from read + serialise`);
      }
      const us = Number(ns) / 1e3 / o.pages;
      rows.push({ case: name, us_per_page: Math.round(us) });
      console.log(`${kind.padEnd(8)} ${name.padEnd(20)} ${us.toFixed(0).padStart(6)} µs/page`);
    }
    await writer.close();
    return { database: kind, rows };
  } finally {
    await db.destroy();
    await d.drop();
  }
}

(async () => {
  const out = { date: new Date().toISOString(), machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model, node: process.version, loadavg_at_start: loadavg() }, jobs: JOBS, pages: o.pages, runs: [] };
  for (const kind of o.db) out.runs.push(await measure(kind));
  out.machine.loadavg_at_end = loadavg();
  const file = o.out ?? join(__dirname, 'results', `job-page-${out.date.slice(0, 10)}.json`);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`results written to ${file}`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
