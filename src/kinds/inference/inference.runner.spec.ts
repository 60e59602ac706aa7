import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inferenceKind } from './inference.kind';
import type { RunContext } from '../../runner/run-context';
import { type InferenceResultLine, runInference } from './inference.runner';

type InferenceSpecOf = ReturnType<typeof inferenceKind.parse>;

const home = mkdtempSync(join(tmpdir(), 'ot-inference-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

interface Recorded {
  ctx: RunContext<InferenceSpecOf>;
  logs: string[];
  progress: Array<[number, number | null]>;
  metrics: Array<[number, Record<string, number>]>;
  artifacts: Record<string, string>;
  abort: AbortController;
}

function context(spec: Record<string, unknown>, name: string): Recorded {
  const parsed = inferenceKind.parse({ kind: 'inference', ...spec });
  const abort = new AbortController();
  const r: Omit<Recorded, 'ctx'> = { logs: [], progress: [], metrics: [], artifacts: {}, abort };
  const ctx: RunContext<InferenceSpecOf> = {
    jobId: name,
    spec: parsed,
    attempt: 1,
    resumeState: null,
    workDir: join(home, name),
    paths: {
      hostRoot: process.cwd(),
      pluginsDir: join(process.cwd(), 'test', 'fixtures', 'plugins-throwing'),
      home,
      jobsDir: join(home, 'jobs'),
      datasetsDir: join(home, 'datasets'),
      modelRoots: [home],
    },
    resumed: () => undefined,
    policy: {
      environmentHost: { limits: {}, settings: {} },
      modelRoots: [home],
      remoteEnvironments: { allow: [], allowPublic: true, allowLoopback: true },
    } as RunContext['policy'],
    signal: abort.signal,
    log: (line) => r.logs.push(line),
    progress: (step, total = null) => r.progress.push([step, total]),
    metrics: (step, values) => r.metrics.push([step, values]),
    checkpoint: () => undefined,
    artifact: (artifact, path) => void (r.artifacts[artifact] = path),
    calls: { next: async () => null, reply: () => undefined },
  };
  mkdirSync(ctx.workDir, { recursive: true });
  return { ...r, ctx };
}

describe('runInference', () => {
  it('writes one JSON line per episode, progress per batch, metrics and a summary', async () => {
    const r = context(
      {
        environment: { id: 'math', config: { test_size: 5, style: 'equation' } },
        model: { preset: 'tiny-char', chat_template: 'plain' },
        rollout: { temperature: 1, max_new_tokens: 4 },
        num_tasks: 3,
        samples_per_task: 2,
        batch_size: 4,
      },
      'ok',
    );
    await runInference(r.ctx);
    const lines = readFileSync(r.artifacts['results.jsonl'], 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as InferenceResultLine);
    expect(lines.map((l) => [l.task_index, l.sample])).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
      [2, 0],
      [2, 1],
    ]);
    for (const l of lines) {
      expect(l.messages.at(-1)).toEqual({ role: 'assistant', content: l.response });
      expect(l.finish).toBe('done');
      expect(typeof l.ground_truth).toBe('string');
      expect(l.info).toHaveProperty('correct');
      expect(l.tokens.generated).toBeGreaterThan(0);
      expect(l.tokens.generated).toBeLessThanOrEqual(4);
      expect(l.task).toHaveProperty('prompt');
    }
    expect(r.progress).toEqual([
      [0, 6],
      [4, 6],
      [6, 6],
    ]);
    expect(r.metrics.map(([step]) => step)).toEqual([4, 6]);
    expect(Object.keys(r.metrics[1][1]).sort()).toEqual(['accuracy', 'episodes/env_errors', 'response_length/mean', 'reward/mean', 'reward/std', 'turns/mean']);
    const summary = JSON.parse(readFileSync(r.artifacts['summary.json'], 'utf8'));
    expect(summary).toMatchObject({ environment: { id: 'math' }, episodes: 6, tasks: 3, finish: { done: 6 } });
    expect(summary.metrics['reward/mean']).toBeCloseTo(lines.reduce((a, l) => a + l.reward, 0) / 6, 10);
  });

  it('fails fast with the reason: unknown environment, bad model path, an environment that throws', async () => {
    const base = { model: { preset: 'tiny-char' }, rollout: { max_new_tokens: 2 }, num_tasks: 2 };
    await expect(runInference(context({ ...base, environment: { id: 'nope' } }, 'unknown').ctx)).rejects.toThrow(/environment\.id: Unknown environment nope \(known: .*math/);
    await expect(runInference(context({ ...base, environment: { id: 'math' }, model: { path: join(home, 'missing') } }, 'badpath').ctx)).rejects.toThrow(
      /model\.path .* is not a model folder/,
    );
    await expect(runInference(context({ ...base, environment: { id: 'throwing', config: { throw_in: 'create' } } }, 'create').ctx)).rejects.toThrow(/create exploded/);
    await expect(runInference(context({ ...base, environment: { id: 'math' } }, 'long').ctx)).rejects.toThrow(
      /the prompts of math \(up to \d+ tokens\) leave no room in the model's context of 128 tokens/,
    );
    const step = context({ ...base, environment: { id: 'throwing', config: { throw_in: 'step' } } }, 'step');
    await expect(runInference(step.ctx)).rejects.toThrow(/environment throwing failed on every episode of a batch \(2\): step failed: step exploded/);
    const reset = context({ ...base, environment: { id: 'throwing', config: { throw_in: 'reset' } }, rollout: { env_retries: 1 } }, 'reset');
    await expect(runInference(reset.ctx)).rejects.toThrow(/reset failed after 2 attempt\(s\): reset exploded/);
  });

  it('stops promptly when cancelled and publishes nothing', async () => {
    const r = context(
      {
        environment: { id: 'math', config: { test_size: 200, style: 'equation' } },
        model: { preset: 'tiny-char', chat_template: 'plain' },
        rollout: { max_new_tokens: 32 },
        num_tasks: 200,
        batch_size: 8,
      },
      'cancel',
    );
    // Cancel during the second batch: sampling a chunk is synchronous and yields to the event loop
    // after it, so the cancel lands at the first turn after the first batch was reported (a fixed
    // delay raced the sampler: a fast machine finished the second batch first). Time from the cancel.
    let abortedAt = 0;
    const progress = r.ctx.progress;
    r.ctx.progress = (step, total, message) => {
      progress(step, total, message);
      if (step > 0 && abortedAt === 0) {
        abortedAt = -1;
        setImmediate(() => {
          abortedAt = Date.now();
          r.abort.abort('cancelled');
        });
      }
    };
    await runInference(r.ctx);
    expect(abortedAt).toBeGreaterThan(0);
    expect(Date.now() - abortedAt).toBeLessThan(2000);
    expect(r.artifacts).toEqual({});
    expect(r.logs).toContain('cancelled after 8 of 200 episodes');
    expect(readFileSync(join(r.ctx.workDir, 'results.jsonl'), 'utf8').trim().split('\n')).toHaveLength(8);
    expect(existsSync(join(r.ctx.workDir, 'summary.json'))).toBe(false);
  });
});
