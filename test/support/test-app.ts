import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApi, ensureAdmin } from '../../src/app';
import { loadConfig } from '../../src/config/app-config';
import type { AppConfigValues } from '../../src/config/settings';

/** Settings that make leases, heartbeats and cancellation fast enough for tests. */
export const FAST: Partial<Record<keyof AppConfigValues, unknown>> = {
  heartbeat_seconds: 0.2,
  lease_seconds: 1.5,
  cancel_grace_seconds: 2,
  log_level: 'error',
};

export interface TestApp {
  app: NestFastifyApplication;
  home: string;
  adminKey: string;
  request(method: string, url: string, opts?: { key?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  body: any;
  text: string;
  headers: Record<string, unknown>;
}

export async function startTestApp(opts: { worker?: boolean; config?: Partial<Record<keyof AppConfigValues, unknown>>; home?: string } = {}): Promise<TestApp> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'opentinker-test-'));
  const adminKey = 'otk_test_admin_key_0123456789abcdef';
  const config = loadConfig({}, { home, admin_key: adminKey, cpu_slots: 2, gpus: 'none', ...FAST, ...opts.config });
  const app = await createApi({ config, worker: opts.worker ?? true });
  await ensureAdmin(app);
  await app.getHttpAdapter().getInstance().ready();
  const request: TestApp['request'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const key = o.key === undefined ? adminKey : o.key;
    if (key) headers.authorization = `Bearer ${key}`;
    let payload: string | undefined;
    if (o.body !== undefined) {
      payload = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({ method: method as 'GET', url, headers, payload });
    let body: unknown = undefined;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, body, text: res.body, headers: res.headers };
  };
  return {
    app,
    home,
    adminKey,
    request,
    close: async () => {
      await app.close();
      if (!opts.home) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a truthy value or the timeout passes. */
export async function waitFor<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Waits for a job to reach one of `states` and returns it. */
export function waitForState(t: TestApp, id: string, states: string[], timeoutMs = 15_000): Promise<any> {
  return waitFor(async () => {
    const res = await t.request('GET', `/v1/jobs/${id}`);
    return states.includes(res.body?.state) ? res.body : undefined;
  }, timeoutMs);
}

/** Parses an SSE body into events. */
export function parseSse(text: string): { id?: string; event: string; data: any }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() && !block.startsWith(':'))
    .map((block) => {
      const out: { id?: string; event: string; data: any } = { event: 'message', data: undefined };
      for (const line of block.split('\n')) {
        const i = line.indexOf(': ');
        const [k, v] = i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 2)];
        if (k === 'id') out.id = v;
        else if (k === 'event') out.event = v;
        else if (k === 'data') out.data = JSON.parse(v);
      }
      return out;
    });
}
