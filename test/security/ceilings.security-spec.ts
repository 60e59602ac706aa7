import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { unusedPort } from '../support/unused-port';
import { episodeCall, startTenants, type Tenants } from './tenants';

/**
 * Attacks 3 and 8 of SECURITY.md: a tenant sets the resources it gets (sandbox limits, devices,
 * priority) beyond what the operator allows.
 */
describe('security: operator ceilings on what a tenant may ask for', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants({ worker: true, config: { sandbox_memory_mb: 1024, sandbox_max_processes: 16, sandbox_scratch_mb: 256, max_user_priority: 10 } });
  });
  afterAll(() => s.t.close());

  const submit = (key: string, spec: Record<string, unknown>) => s.t.request('POST', '/v1/jobs', { key, body: spec });
  const tool = (config: Record<string, unknown>) => ({ kind: 'train', environment: { id: 'math-tool', config }, model: { preset: 'tiny-char' }, total_steps: 1, batch_size: 1 });

  it('3. refuses sandbox limits above the ceilings and the sandbox uid, in a job spec and on the protocol route', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ memory_mb: 1_048_576 }, 'memory_mb', 'OT_ERR_LIMIT_EXCEEDED'],
      [{ max_processes: 4096 }, 'max_processes', 'OT_ERR_LIMIT_EXCEEDED'],
      [{ scratch_mb: 65_536 }, 'scratch_mb', 'OT_ERR_LIMIT_EXCEEDED'],
      [{ sandbox_uid: 0 }, 'sandbox_uid', 'OT_ERR_HOST_ONLY'],
      [{ python_path: '/usr/bin/perl' }, 'python_path', 'OT_ERR_HOST_ONLY'],
    ];
    for (const [config, key, code] of cases) {
      const res = await submit(s.alice, tool(config));
      expect([key, res.status, res.body.code, res.body.field]).toEqual([key, 400, code, `environment.config.${key}`]);
      const episode = await episodeCall(s.t, s.alice, 'math-tool')('POST', '/v1/episodes', { seed: 1, config });
      expect([key, episode.status, episode.body.code]).toEqual([key, 400, code === 'OT_ERR_HOST_ONLY' ? 'ENV_CONFIG_FORBIDDEN' : 'ENV_CONFIG_LIMIT']);
    }
    const ok = await submit(s.alice, tool({ memory_mb: 512, max_processes: 8 }));
    expect(ok.status).toBe(201);
    await s.t.request('POST', `/v1/jobs/${ok.body.id}/cancel`, { key: s.alice });
  });

  it('3. env serve applies the same ceilings, and warns when it listens beyond loopback without a token', async () => {
    const port = await unusedPort();
    const child = spawn(process.execPath, [join(process.cwd(), 'bin', 'opentinker.js'), 'env', 'serve', 'math-tool', '--host', '0.0.0.0', '--port', String(port)], {
      env: { ...process.env, OPENTINKER_SANDBOX_MEMORY_MB: '256', OPENTINKER_ENV_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d) => (stdout += d));
    try {
      const deadline = Date.now() + 30_000;
      while (!stdout.includes('served on') && Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`env serve exited: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(stderr).toMatch(/Warning: serving on 0\.0\.0\.0 without --token/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/episodes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seed: 1, config: { memory_mb: 512 } }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'ENV_CONFIG_LIMIT', field: 'config.memory_mb' });
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);

  it('8. refuses resources no registered worker can ever hold, naming the field', async () => {
    const gpus = await submit(s.alice, { kind: 'sleep', resources: { gpus: 8 } });
    expect([gpus.status, gpus.body.code, gpus.body.field]).toEqual([400, 'OT_ERR_UNSCHEDULABLE', 'resources.gpus']);
    const cpus = await submit(s.alice, { kind: 'sleep', resources: { cpu_slots: 1000 } });
    expect([cpus.status, cpus.body.code, cpus.body.field]).toEqual([400, 'OT_ERR_UNSCHEDULABLE', 'resources.cpu_slots']);
    expect(cpus.body.message).toMatch(/the largest worker has 0 GPU\(s\), and 2 CPU slot\(s\)/);
  });

  it('8. caps the priority a plain user may give a job; admins may go above', async () => {
    const high = await submit(s.alice, { kind: 'sleep', priority: 100, steps: 1 });
    expect([high.status, high.body.code, high.body.field]).toEqual([400, 'OT_ERR_LIMIT_EXCEEDED', 'priority']);
    expect((await submit(s.alice, { kind: 'sleep', priority: 10, steps: 1 })).status).toBe(201);
    expect((await s.t.request('POST', '/v1/jobs', { body: { kind: 'sleep', priority: 100, steps: 1 } })).status).toBe(201);
  });
});
