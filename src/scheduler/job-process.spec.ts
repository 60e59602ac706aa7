import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobEntity } from '../jobs/job.entity';
import { JobProcess } from './job-process';

describe('JobProcess', () => {
  it("starts the runner without the worker's secrets: its database and queue URLs, API keys, the Hub token, a W&B key", async () => {
    const secrets = ['OPENTINKER_ADMIN_KEY', 'OPENTINKER_DATABASE_URL', 'OPENTINKER_REDIS_URL', 'OPENTINKER_API_KEY', 'HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'WANDB_API_KEY'];
    const saved = Object.fromEntries([...secrets, 'WANDB_ENTITY'].map((k) => [k, process.env[k]]));
    for (const k of secrets) process.env[k] = 'secret';
    process.env.WANDB_ENTITY = 'not-a-secret';
    const dir = mkdtempSync(join(tmpdir(), 'ot-job-process-'));
    try {
      const job = { id: 'job-1', kind: 'sleep', spec: {}, attempts: 1, resumeState: null, devices: [] } as unknown as JobEntity;
      const p = new JobProcess(job, {
        runnerEntry: join(process.cwd(), 'test', 'fixtures', 'runners', 'print-env.cjs'),
        jobDir: dir,
        paths: { home: dir, hostRoot: dir, pluginsDir: dir },
        engine: {} as never,
        stackTraces: false,
        policy: {} as never,
        secrets: {},
        graceMs: 1000,
        onMessage: () => undefined,
        onLog: () => undefined,
      });
      expect((await p.exited).code).toBe(0);
      const names = JSON.parse(readFileSync(join(dir, 'job.log'), 'utf8')) as string[];
      expect(names.filter((n) => secrets.includes(n))).toEqual([]);
      expect(names).toEqual(expect.arrayContaining(['WANDB_ENTITY', 'CUDA_VISIBLE_DEVICES', 'OPENTINKER_JOB_ID']));
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the real job runner, which fails at once on a start message that does not fit its protocol, naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ot-job-process-'));
    try {
      const messages: unknown[] = [];
      const job = { id: 'job-1', kind: 'sleep', spec: { kind: 'sleep' }, attempts: 1, resumeState: null, devices: [] } as unknown as JobEntity;
      const p = new JobProcess(job, {
        runnerEntry: join(process.cwd(), 'dist', 'job-runner.main.js'),
        jobDir: dir,
        paths: { home: dir, hostRoot: dir, pluginsDir: dir },
        // Not the engine's settings: the runner must refuse the message, not run the job.
        engine: { engine_backend: 'quantum' } as never,
        stackTraces: false,
        policy: { environmentHost: { limits: {}, settings: {} }, modelRoots: [], remoteEnvironments: { allow: [], allowPublic: false, allowLoopback: false } },
        secrets: {},
        graceMs: 1000,
        onMessage: (m) => messages.push(m),
        onLog: () => undefined,
      });
      expect((await p.exited).code).toBe(1);
      expect(messages).toEqual([{ type: 'failed', message: expect.stringMatching(/^The worker sent a message that does not fit its protocol \(engine\.engine_backend: /) }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
