#!/usr/bin/env node
'use strict';
/**
 * Reference point for the HTTP benchmark (`http.bench.js --bare`): the same two routes on bare Fastify,
 * without Nest, TypeORM, validation, guards or metrics, reading the benchmark's SQLite file with the
 * same SQL the API runs (TypeORM's findAndCount: rows ordered by created_at DESC, id DESC, plus a count)
 * and building the same JSON. What the API spends above this is framework and ORM overhead; what this
 * spends is the floor for the database schema as it is.
 *
 * Env: OPENTINKER_HOME (holds opentinker.db), OPENTINKER_PORT, OPENTINKER_ADMIN_KEY.
 */
const { join } = require('node:path');
const Fastify = require('fastify');
const Database = require('better-sqlite3');

const home = process.env.OPENTINKER_HOME;
const port = Number(process.env.OPENTINKER_PORT);
const expected = `Bearer ${process.env.OPENTINKER_ADMIN_KEY}`;

const db = new Database(join(home, 'opentinker.db'), { readonly: true });
db.pragma('busy_timeout = 5000');
const list = db.prepare('SELECT * FROM "jobs" ORDER BY "created_at" DESC, "id" DESC LIMIT ? OFFSET ?');
const count = db.prepare('SELECT COUNT(*) AS n FROM "jobs"');

const iso = (ms) => (ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString());
const json = (s) => (s === null || s === undefined ? null : JSON.parse(s));

const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok' }));
app.get('/v1/jobs', async (request, reply) => {
  if (request.headers.authorization !== expected) return reply.code(401).send({ error: 'unauthenticated' });
  const limit = Math.min(200, Math.max(1, Number(request.query.limit ?? 50) || 50));
  const page = Math.max(1, Number(request.query.page ?? 1) || 1);
  const items = list.all(limit, (page - 1) * limit).map((r) => ({
    id: r.id,
    kind: r.kind,
    name: r.name,
    state: r.state,
    owner_id: r.owner_id,
    priority: r.priority,
    spec: json(r.spec),
    resources: json(r.resources),
    devices: json(r.devices),
    worker_id: r.worker_id,
    attempts: r.attempts,
    max_attempts: r.max_attempts,
    error: r.error,
    exit_code: r.exit_code,
    progress: json(r.progress),
    cancel_requested: r.cancel_requested_at !== null,
    created_at: iso(r.created_at),
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    updated_at: iso(r.updated_at),
  }));
  return { items, page, limit, total: count.get().n };
});

app.listen({ host: '127.0.0.1', port }).catch((e) => {
  process.stderr.write(`bare-server: ${e.message}\n`);
  process.exit(1);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, () => app.close().then(() => process.exit(0)));
