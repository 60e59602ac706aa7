/**
 * Helpers for integration tests of the distributed mode: a scratch PostgreSQL database, a reserved Redis
 * logical database, standalone `opentinker worker` processes, and job helpers over the API.
 */
import { expect } from '@jest/globals';
import IORedis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { BULLMQ_QUEUE_NAME } from '../../src/scheduler/bullmq.queue';
import { parseSse, TestApp } from '../support/test-app';

/** Where the servers are; IT_PG_URL (a database to connect to for CREATE DATABASE) and IT_REDIS_URL override. */
export const PG_ADMIN_URL = process.env.IT_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_BASE = (process.env.IT_REDIS_URL ?? 'redis://127.0.0.1:6379').replace(/\/\d*$/, '');

/** Worker settings: fast heartbeats and short leases so that a lost worker is noticed in seconds. */
export const HEARTBEAT_SECONDS = 0.3;
export const LEASE_SECONDS = 3;

const CLI = join(process.cwd(), 'bin', 'opentinker.js');
const REDIS_LOCK_KEY = 'opentinker:integration-test:lock';
export const FINAL = ['succeeded', 'failed', 'cancelled'];

async function withPg<T>(work: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database and returns its name and URL. */
export async function createDatabase(): Promise<{ name: string; url: string }> {
  const name = `opentinker_it_${randomBytes(5).toString('hex')}`;
  await withPg((c) => c.query(`CREATE DATABASE ${name}`));
  return { name, url: PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`) };
}

export async function dropDatabase(name: string): Promise<void> {
  await withPg((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/**
 * Reserves a Redis logical database (1..15) for this run with a lock key in it, so that concurrent runs
 * of the suite do not share (and flush) one queue. Returns its URL and a release function.
 */
export async function reserveRedisDb(base = REDIS_BASE): Promise<{ url: string; release: () => Promise<void> }> {
  const token = randomBytes(8).toString('hex');
  const indexes = Array.from({ length: 15 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
  for (const index of indexes) {
    const url = `${base}/${index}`;
    const client = new IORedis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      await client.connect();
      if ((await client.set(REDIS_LOCK_KEY, token, 'PX', 10 * 60_000, 'NX')) === 'OK') {
        return {
          url,
          release: async () => {
            const c = new IORedis(url, { maxRetriesPerRequest: 1 });
            try {
              if ((await c.get(REDIS_LOCK_KEY)) === token) await c.del(REDIS_LOCK_KEY);
            } finally {
              c.disconnect();
            }
          },
        };
      }
    } finally {
      client.disconnect();
    }
  }
  throw new Error('No free Redis logical database (1..15) for the integration test');
}

/** Deletes every Redis key of the queue: what Redis restarting empty (or FLUSHDB) does to it. */
export async function dropQueueKeys(redis: IORedis): Promise<number> {
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `bull:${BULLMQ_QUEUE_NAME}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) removed += await redis.del(...keys);
  } while (cursor !== '0');
  return removed;
}

/** Pids of live processes running the given job (job runners carry OPENTINKER_JOB_ID). */
export function runnerPids(jobId: string): number[] {
  if (!existsSync('/proc/self/environ')) return [];
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`OPENTINKER_JOB_ID=${jobId}`)) pids.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

export interface WorkerProcess {
  id: string;
  home: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = (w: WorkerProcess) => w.child.exitCode === null && w.child.signalCode === null;

/**
 * The API under test (in this process) plus standalone worker processes, with helpers that poll the API.
 * Every wait that times out reports what it waited for and the tail of each worker's output.
 */
export class Cluster {
  readonly workers = new Map<string, WorkerProcess>();
  private readonly homes: string[] = [];
  t!: TestApp;

  constructor(private readonly settings: { databaseUrl: string; redisUrl: string }) {}

  // -- waiting ---------------------------------------------------------------------------------------

  diagnostics(): string {
    return [...this.workers.values()].map((w) => `--- worker ${w.id} (pid ${w.child.pid}) ---\n${tail(w)}`).join('\n');
  }

  async until<T>(what: string, check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}\n${this.diagnostics()}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  // -- jobs ------------------------------------------------------------------------------------------

  async submit(key: string, body: Record<string, unknown>): Promise<any> {
    const res = await this.t.request('POST', '/v1/jobs', { key, body: { kind: 'sleep', ...body } });
    expect(res.status).toBe(201);
    return res.body;
  }

  async job(id: string): Promise<any> {
    const res = await this.t.request('GET', `/v1/jobs/${id}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /** Waits for one of `states`; fails at once if the job ends in another final state. */
  waitState(id: string, states: string[], timeoutMs = 20_000): Promise<any> {
    return this.until(
      `job ${id} to reach ${states.join('|')}`,
      async () => {
        const job = await this.job(id);
        if (FINAL.includes(job.state) && !states.includes(job.state)) {
          throw new Error(`job ${id} (${job.name}) ended ${job.state} (error: ${job.error}) while waiting for ${states.join('|')}\n${this.diagnostics()}`);
        }
        return states.includes(job.state) ? job : undefined;
      },
      timeoutMs,
    );
  }

  /** The `state` events of a finished job, from its event stream. */
  async stateEvents(id: string): Promise<any[]> {
    const res = await this.t.request('GET', `/v1/jobs/${id}/events`);
    expect(res.status).toBe(200);
    return parseSse(res.text)
      .filter((e) => e.event === 'state')
      .map((e) => e.data);
  }

  async logs(id: string): Promise<string> {
    const res = await this.t.request('GET', `/v1/jobs/${id}/logs`);
    expect(res.status).toBe(200);
    return res.text;
  }

  async liveWorkerIds(): Promise<string[]> {
    const res = await this.t.request('GET', '/v1/devices');
    expect(res.status).toBe(200);
    return res.body.map((w: any) => w.worker_id);
  }

  // -- worker processes ------------------------------------------------------------------------------

  /** Spawns `opentinker worker` (2 CPU slots, no GPU); a restarted worker keeps its id and home. */
  startWorker(id: string, settings: Record<string, string> = {}): WorkerProcess {
    const previous = this.workers.get(id);
    if (previous && running(previous)) throw new Error(`worker ${id} is still running`);
    const home = previous?.home ?? mkdtempSync(join(tmpdir(), `opentinker-it-${id}-`));
    if (!previous) this.homes.push(home);
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OPENTINKER_') && k !== 'NODE_OPTIONS') env[k] = v;
    Object.assign(env, {
      OPENTINKER_DATABASE_URL: this.settings.databaseUrl,
      OPENTINKER_REDIS_URL: this.settings.redisUrl,
      OPENTINKER_HOME: home,
      OPENTINKER_CPU_SLOTS: '2',
      OPENTINKER_GPUS: 'none',
      OPENTINKER_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS),
      OPENTINKER_LEASE_SECONDS: String(LEASE_SECONDS),
      OPENTINKER_CANCEL_GRACE_SECONDS: '2',
      OPENTINKER_WORKER_ID: id,
      OPENTINKER_LOG_LEVEL: 'warn',
      ...settings,
    });
    const child = spawn(process.execPath, [CLI, 'worker'], { env, cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString('utf8'));
      if (output.length > 400) output.splice(0, output.length - 400);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const w: WorkerProcess = { id, home, child, output, exited };
    this.workers.set(id, w);
    return w;
  }

  /** Waits until the worker process says it runs and the API lists it among the live workers. */
  async ready(w: WorkerProcess): Promise<WorkerProcess> {
    await this.until(
      `worker ${w.id} to start`,
      async () => {
        if (!running(w)) throw new Error(`worker ${w.id} exited during start:\n${tail(w)}`);
        return w.output.join('').includes('OpenTinker worker running') && (await this.liveWorkerIds()).includes(w.id);
      },
      30_000,
    );
    return w;
  }

  async stopWorker(w: WorkerProcess, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!running(w)) return w.exited;
    w.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 15_000)));
    const result = await Promise.race([w.exited, timeout]);
    clearTimeout(timer);
    if (result === 'timeout') {
      w.child.kill('SIGKILL');
      throw new Error(`worker ${w.id} did not exit within 15 s of ${signal}\n${tail(w)}`);
    }
    return result;
  }

  async restartWorker(id: string, settings: Record<string, string> = {}): Promise<WorkerProcess> {
    const w = this.workers.get(id);
    if (w) await this.stopWorker(w, 'SIGTERM');
    return this.ready(this.startWorker(id, settings));
  }

  /** Kills every worker process still running (their job runners exit when their worker goes). */
  async killAll(): Promise<void> {
    for (const w of this.workers.values()) if (running(w)) w.child.kill('SIGKILL');
    await Promise.all([...this.workers.values()].map((w) => Promise.race([w.exited, new Promise((r) => setTimeout(r, 5_000).unref())])));
  }

  removeHomes(): void {
    for (const home of this.homes) rmSync(home, { recursive: true, force: true });
  }
}

function tail(w: WorkerProcess, lines = 30): string {
  return w.output.join('').split('\n').slice(-lines).join('\n');
}
