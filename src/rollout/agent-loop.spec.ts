import { padBatch } from '@opentinker/engine';
import type { Episode, EnvironmentInstance, Message, StepResult } from '@opentinker/env-sdk';
import * as tf from '@tensorflow/tfjs-core';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelSpec, rolloutSpec } from './rl-spec';
import { type EpisodeItem, runEpisodes } from './agent-loop';
import { loadPolicy, type Policy } from './policy';
import type { Trajectory } from './trajectory';

/**
 * A scripted multi-turn environment: the episode answers each turn with `obs <n>` and reward n, and is
 * done after `turns` steps. Task `{ hang: 'step' }` never answers a step; `{ failResets: k }` fails its
 * first k resets; `{ failStep: true }` throws on step.
 */
interface FakeTask {
  turns?: number;
  hang?: 'step' | 'reset';
  failResets?: number;
  failStep?: boolean;
  role?: 'user' | 'tool';
}

function fakeEnv(log: string[] = []): EnvironmentInstance<FakeTask> {
  const resets = new Map<FakeTask, number>();
  return {
    tasks: { size: () => 100, get: () => ({}) },
    newEpisode(): Episode<FakeTask> {
      let task: FakeTask = {};
      let n = 0;
      return {
        reset(t: FakeTask, seed: number): Message[] | Promise<Message[]> {
          task = t;
          const count = (resets.get(t) ?? 0) + 1;
          resets.set(t, count);
          log.push(`reset ${seed}`);
          if (t.hang === 'reset') return new Promise<Message[]>(() => undefined);
          if (count <= (t.failResets ?? 0)) throw new Error(`reset boom ${count}`);
          return [
            { role: 'system', content: 'Count.' },
            { role: 'user', content: 'Go' },
          ];
        },
        step(action: string): StepResult | Promise<StepResult> {
          if (task.hang === 'step') return new Promise<StepResult>(() => undefined);
          if (task.failStep) throw new Error('step boom');
          n++;
          log.push(`step ${action.length}`);
          const done = n >= (task.turns ?? 3);
          return { observation: done ? '' : `obs ${n}`, observationRole: task.role, reward: n, done, info: { n } };
        },
        close() {
          log.push('close');
        },
      };
    },
  };
}

const paths = { hostRoot: process.cwd(), pluginsDir: '', home: tmpdir(), jobsDir: join(tmpdir(), 'jobs'), datasetsDir: join(tmpdir(), 'datasets'), modelRoots: [] };
let policy: Policy;

beforeAll(async () => {
  policy = await loadPolicy(modelSpec.parse({ preset: 'tiny-char', seed: 1 }), { paths, log: () => undefined });
});
afterAll(() => policy.dispose());

const items = (tasks: FakeTask[], samples = 1): EpisodeItem[] =>
  tasks.flatMap((task, taskIndex) => Array.from({ length: samples }, (_, sample) => ({ taskIndex, group: taskIndex, sample, task })));

function rollout(over: Record<string, unknown> = {}) {
  return rolloutSpec.parse({ max_new_tokens: 6, max_turns: 3, env_timeout_seconds: 5, ...over });
}

describe('runEpisodes', () => {
  it('plays multi-turn episodes: environment tokens masked, one reward per turn at its last token', async () => {
    const before = tf.memory().numTensors;
    const [t] = await runEpisodes(policy, fakeEnv(), items([{ turns: 3 }]), { rollout: rollout(), seed: 4 });
    expect(tf.memory().numTensors).toBe(before);
    expect(t.finish).toBe('done');
    expect(t.turnRewards).toEqual([1, 2, 3]);
    expect(t.reward).toBe(6);
    expect(t.turnEnds).toHaveLength(3);
    expect(t.info).toEqual({ n: 3 });
    expect(t.promptIds).toEqual(policy.renderPrompt(t.messages.slice(0, 2)));
    expect(t.lossMask).toHaveLength(t.responseIds.length);
    expect(t.oldLogProbs).toHaveLength(t.responseIds.length);
    expect(t.generatedTokens).toBe(t.lossMask.reduce((a, b) => a + b, 0));
    // Sequence = turn 1, observation 1, turn 2, observation 2, turn 3; each turn ends at a turnEnd.
    let at = 0;
    for (let turn = 0; turn < 3; turn++) {
      const end = t.turnEnds[turn];
      const ids = t.responseIds.slice(at, end + 1);
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.length).toBeLessThanOrEqual(6);
      expect([...t.lossMask.slice(at, end + 1)].every((m) => m === 1)).toBe(true);
      expect(t.messages[2 + 2 * turn]).toEqual({ role: 'assistant', content: policy.tokenizer.decode(ids, { skipSpecial: true }) });
      at = end + 1;
      if (turn < 2) {
        const obs = policy.renderObservation([{ role: 'user', content: `obs ${turn + 1}` }], ids[ids.length - 1]);
        expect(t.responseIds.slice(at, at + obs.length)).toEqual(obs);
        expect([...t.lossMask.slice(at, at + obs.length)].every((m) => m === 0)).toBe(true);
        expect([...t.oldLogProbs.slice(at, at + obs.length)].every((v) => v === 0)).toBe(true);
        expect(t.messages[3 + 2 * turn]).toEqual({ role: 'user', content: `obs ${turn + 1}` });
        at += obs.length;
      }
    }
    expect(at).toBe(t.responseIds.length);
  });

  it('token in, token out: old log-probs are what the model scores on the same ids', async () => {
    const trajectories = await runEpisodes(policy, fakeEnv(), items([{ turns: 2 }, { turns: 1, role: 'tool' }], 2), { rollout: rollout(), seed: 9, batchSize: 3 });
    const rows = trajectories.map((t) => [...t.promptIds, ...t.responseIds]);
    const scores = policy.model.scoreTokens(padBatch(rows, { side: 'right' }));
    const width = Math.max(...rows.map((r) => r.length));
    let checked = 0;
    trajectories.forEach((t, b) => {
      t.responseIds.forEach((_, i) => {
        if (!t.lossMask[i]) return;
        expect(Math.abs(scores.logProbs[b * width + t.promptIds.length + i] - t.oldLogProbs[i])).toBeLessThan(1e-4);
        checked++;
      });
    });
    expect(checked).toBeGreaterThan(10);
  });

  it('is deterministic for a seed; samples of a task share the reset seed', async () => {
    const log: string[] = [];
    const run = (seed: number) => runEpisodes(policy, fakeEnv(log), items([{}, {}], 2), { rollout: rollout(), seed, batchSize: 2 });
    const ids = (ts: Trajectory[]) => ts.map((t) => t.responseIds);
    const a = await run(3);
    expect(ids(await run(3))).toEqual(ids(a));
    expect(ids(await run(4))).not.toEqual(ids(a));
    const seeds = log.filter((l) => l.startsWith('reset')).slice(0, 4);
    expect(seeds[0]).toBe(seeds[1]);
    expect(seeds[0]).not.toBe(seeds[2]);
    expect(a[0].responseIds).not.toEqual(a[1].responseIds);
  });

  it('retries a failing reset, ends an episode whose step fails or times out with env_error, and closes every episode', async () => {
    const log: string[] = [];
    const started = Date.now();
    const ts = await runEpisodes(
      policy,
      fakeEnv(log),
      items([{ failResets: 2, turns: 1 }, { failResets: 5 }, { hang: 'step' }, { failStep: true }, { hang: 'reset' }, { turns: 2 }]),
      { rollout: rollout({ env_retries: 2, env_timeout_seconds: 0.3 }), seed: 1 },
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(ts.map((t) => t.finish)).toEqual(['done', 'env_error', 'env_error', 'env_error', 'env_error', 'done']);
    expect(ts[1].error).toMatch(/reset failed after 3 attempt\(s\): reset boom 3/);
    expect(ts[1].responseIds).toEqual([]);
    expect(ts[2].error).toMatch(/step failed: step took longer than 0.3 s/);
    expect(ts[3].error).toMatch(/step failed: step boom/);
    expect(ts[4].error).toMatch(/reset took longer/);
    expect(ts[2].turnRewards).toHaveLength(ts[2].turnEnds.length);
    // Every episode that was handed out got closed: 1 + 3 + 3 + 1 + 1 + 3 (failed and timed-out resets included).
    expect(log.filter((l) => l === 'close')).toHaveLength(12);
  });

  it('ends at max_turns, at the response budget, and at a stop string', async () => {
    const [capped] = await runEpisodes(policy, fakeEnv(), items([{ turns: 10 }]), { rollout: rollout({ max_turns: 2 }), seed: 2 });
    expect(capped.finish).toBe('max_turns');
    expect(capped.turnEnds).toHaveLength(2);

    const [short] = await runEpisodes(policy, fakeEnv(), items([{ turns: 10 }]), { rollout: rollout({ max_turns: 10, max_response_tokens: 30 }), seed: 2 });
    expect(short.finish).toBe('length');
    expect(short.responseIds.length).toBeLessThanOrEqual(30);

    // Greedy output of this seed, then the same run stopped at a piece of that text.
    const greedy = { rollout: rollout({ max_turns: 1, max_new_tokens: 12 }), seed: 2, temperature: 0 };
    const [free] = await runEpisodes(policy, fakeEnv(), items([{ turns: 1 }]), greedy);
    const bytes = free.responseIds.filter((id) => id < 128);
    expect(bytes.length).toBeGreaterThan(3);
    const stop = String.fromCharCode(bytes[2]);
    const [stopped] = await runEpisodes(policy, fakeEnv(), items([{ turns: 1 }]), { ...greedy, rollout: { ...greedy.rollout, stop: [stop] } });
    const text = stopped.messages[2].content;
    expect(text.endsWith(stop)).toBe(true);
    expect(text.indexOf(stop)).toBe(text.length - stop.length);
    expect(free.messages[2].content.startsWith(text)).toBe(true);
  });

  it('returns promptly with finish cancelled when the signal aborts', async () => {
    const controller = new AbortController();
    const run = runEpisodes(policy, fakeEnv(), items([{ hang: 'step' }, { turns: 5 }]), {
      rollout: rollout({ env_timeout_seconds: 600, max_turns: 5 }),
      seed: 1,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const ts = await run;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(ts.map((t) => t.finish)).toEqual(['cancelled', 'cancelled']);
    for (const t of ts) expect(t.turnRewards).toHaveLength(t.turnEnds.length);
  });
});
