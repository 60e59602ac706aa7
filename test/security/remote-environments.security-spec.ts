import { createServer, type Server } from 'node:http';
import { DataSource } from 'typeorm';
import type { AddressInfo } from 'node:net';
import { loadRegistry } from '../../src/registry/registry-loader';
import { createEnvServer } from '../../src/registry/env-server';
import { waitForState } from '../support/test-app';
import { unusedPort } from '../support/unused-port';
import { startTenants, type Tenants } from './tenants';

const trainSpec = (environment: Record<string, unknown>) => ({
  kind: 'train',
  environment,
  model: { preset: 'tiny-char', chat_template: 'plain' },
  algorithm: { rollout_n: 2 },
  rollout: { max_new_tokens: 4 },
  batch_size: 2,
  total_steps: 1,
  val_batch_size: 2,
  val_before_train: false,
});

/**
 * Attack 6 of SECURITY.md: `environment.url` made the server fetch any host with the tenant's token
 * attached, and its errors told open, closed and HTTP ports apart. Also attack 8's plain-text token.
 */
describe('security: remote environments are an allow-list, and their errors map nothing', () => {
  let s: Tenants;
  let http: Server;
  let httpPort: number;
  beforeAll(async () => {
    s = await startTenants({ worker: true });
    http = createServer((_req, res) => res.end('<html>internal admin panel</html>'));
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    httpPort = (http.address() as AddressInfo).port;
  });
  afterAll(async () => {
    http.close();
    await s.t.close();
  });

  it("6. refuses a plain user's loopback, private, link-local and metadata URLs, with one message whatever listens there", async () => {
    const closed = await unusedPort();
    const messages = new Set<string>();
    for (const url of [
      `http://127.0.0.1:${httpPort}`,
      `http://127.0.0.1:${closed}`,
      `http://localhost:${httpPort}`,
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1:8088',
      'http://[::1]:80',
      'http://[::ffff:127.0.0.1]:22',
    ]) {
      const res = await s.t.request('POST', '/v1/jobs', { key: s.bob, body: trainSpec({ id: 'math', url, token: 'bobs-token' }) });
      expect([url, res.status, res.body.code, res.body.field]).toEqual([url, 400, 'OT_ERR_URL_NOT_ALLOWED', 'environment.url']);
      messages.add(res.body.message.replace(/environment\.url \S+ /, 'environment.url HOST '));
    }
    expect([...messages]).toHaveLength(1);
    expect([...messages][0]).not.toMatch(/ECONNREFUSED|closed|non-JSON|admin panel/);
  });

  it("6. the admin may use loopback; a job's error says only unreachable, or not the protocol, never the port's state or the body", async () => {
    const closed = await unusedPort();
    const errors: string[] = [];
    for (const url of [`http://127.0.0.1:${closed}`, `http://127.0.0.1:${httpPort}`]) {
      const job = await s.t.request('POST', '/v1/jobs', { body: trainSpec({ id: 'math', url }) });
      expect(job.status).toBe(201);
      const done = await waitForState(s.t, job.body.id, ['failed', 'succeeded'], 60_000);
      expect(done.state).toBe('failed');
      errors.push(done.error);
      const logs = (await s.t.request('GET', `/v1/jobs/${job.body.id}/logs`)).text;
      expect(logs).not.toMatch(/ECONNREFUSED|admin panel|answered 200/);
    }
    expect(errors[0]).toBe(`environment.url: Environment server http://127.0.0.1:${closed} is unreachable`);
    expect(errors[1]).toBe(`environment.url: GET http://127.0.0.1:${httpPort}/v1/info: the answer is not the environment protocol`);
  }, 120_000);

  it("8. a remote environment's token is kept out of the stored spec and still reaches the environment server", async () => {
    const math = (await loadRegistry({ hostRoot: process.cwd(), pluginsDir: `${s.t.home}/no-plugins` })).find((r) => r.id === 'math')!.environment!;
    const { app } = await createEnvServer(math, { token: 'the-secret-token-0042', config: { style: 'equation', difficulty: 1, test_size: 2 } });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const job = await s.t.request('POST', '/v1/jobs', { body: trainSpec({ id: 'math', url, token: 'the-secret-token-0042' }) });
      expect(job.status).toBe(201);
      expect(job.text).not.toContain('the-secret-token-0042');
      const done = await waitForState(s.t, job.body.id, ['failed', 'succeeded'], 90_000);
      expect([done.state, done.error ?? null]).toEqual(['succeeded', null]);
      expect(JSON.stringify(done)).not.toContain('the-secret-token-0042');
      const list = await s.t.request('GET', '/v1/jobs');
      expect(list.text).not.toContain('the-secret-token-0042');
      // Not in the jobs table either (database backups, admin tools and listings read it).
      const [row] = await s.t.app.get(DataSource).query('SELECT spec FROM jobs WHERE id = ?', [job.body.id]);
      expect(String(row.spec)).not.toContain('the-secret-token-0042');
      expect(JSON.parse(String(row.spec)).environment.url).toBe(url);
    } finally {
      await app.close();
    }
  }, 120_000);
});
