/**
 * Redis going away and coming back empty. The shared Redis must stay up for everyone else, so this file
 * runs a private `redis-server` (no persistence) on a free port, with its own PostgreSQL database, the
 * API in this process (no worker) and one standalone worker process. Skipped when there is no
 * `redis-server` on the PATH.
 */
import { jest } from '@jest/globals';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { startTestApp, TestApp } from '../support/test-app';
import { Cluster, createDatabase, dropDatabase, HEARTBEAT_SECONDS, LEASE_SECONDS } from './cluster';

jest.setTimeout(60_000);

const HAVE_REDIS_SERVER = spawnSync('redis-server', ['--version']).status === 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts an empty, non-persistent redis-server and resolves once it accepts connections. */
function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${output}`)), 10_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with code ${code}:\n${output}`));
    });
  });
}

async function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

/** `work`, or a failure naming `what` after `ms` (so a hang fails the test instead of timing it out). */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

(HAVE_REDIS_SERVER ? describe : describe.skip)('Redis outage (private redis-server)', () => {
  let port: number;
  let redisServer: ChildProcess | undefined;
  let db: { name: string; url: string } | undefined;
  let c: Cluster;
  let t: TestApp;
  let alice: string;
  const W = 'it-outage-worker';

  beforeAll(async () => {
    port = await freePort();
    redisServer = await startRedis(port);
    db = await createDatabase();
    const redisUrl = `redis://127.0.0.1:${port}`;
    c = new Cluster({ databaseUrl: db.url, redisUrl });
    t = c.t = await startTestApp({
      worker: false,
      config: { database_url: db.url, redis_url: redisUrl, lease_seconds: LEASE_SECONDS, heartbeat_seconds: HEARTBEAT_SECONDS },
    });
    alice = (await t.request('POST', '/v1/users', { body: { name: 'alice' } })).body.api_key.key;
    await c.ready(c.startWorker(W));
  }, 60_000);

  afterAll(async () => {
    await c?.killAll();
    // Closing the API's queue needs Redis if commands are pending; do not let that hang the suite.
    if (redisServer?.exitCode !== null && port) redisServer = await startRedis(port).catch(() => undefined);
    await within(10_000, 'closing the API', t?.close() ?? Promise.resolve()).catch(() => undefined);
    await stopRedis(redisServer);
    if (db) await dropDatabase(db.name).catch(() => undefined);
    c?.removeHomes();
  }, 30_000);

  it('keeps taking and running jobs and answering health checks while Redis is down, and works on once it is back empty', async () => {
    const before = await c.submit(alice, { name: 'before', steps: 1, step_seconds: 0.1 });
    await c.waitState(before.id, ['succeeded']);
    expect((await t.request('GET', '/health/ready')).status).toBe(200);

    await stopRedis(redisServer);
    // Submitting commits the job to the database and does not wait for Redis to come back.
    const started = Date.now();
    const [during, health] = await Promise.all([
      within(12_000, 'POST /v1/jobs', c.submit(alice, { name: 'during', steps: 1, step_seconds: 0.1 })),
      within(12_000, 'GET /health/ready', t.request('GET', '/health/ready')),
    ]);
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(health.status).toBe(503);
    expect(health.body.database.ok).toBe(true);
    expect(health.body.queue).toMatchObject({ ok: false, detail: expect.stringContaining('Redis') });
    // Workers choose from the database, so the job runs while Redis is still down.
    const duringDone = await c.waitState(during.id, ['succeeded'], 20_000);
    expect(duringDone.attempts).toBe(1);
    expect(c.workers.get(W)!.child.exitCode).toBeNull();

    redisServer = await startRedis(port);
    // The worker reconnects by itself and takes new work...
    const after = await c.submit(alice, { name: 'after', steps: 1, step_seconds: 0.1 });
    const afterDone = await c.waitState(after.id, ['succeeded'], 20_000);
    expect([afterDone.worker_id, afterDone.attempts]).toEqual([W, 1]);
    // ...and the job that ran during the outage ran once.
    expect((await c.stateEvents(during.id)).map((s) => s.state)).toEqual(['queued', 'starting', 'running', 'succeeded']);
    await c.until('the API to report ready', async () => (await t.request('GET', '/health/ready')).status === 200, 10_000);
    expect(c.workers.get(W)!.child.exitCode).toBeNull();
  });
});
