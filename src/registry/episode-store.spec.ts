import { jest } from '@jest/globals';
import { defineEnvironment, EnvironmentError, z } from '@opentinker/env-sdk';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EpisodeStore } from './episode-store';

/**
 * The episode store behind the environment protocol, on an in-process environment, the clock faked:
 * owners, caps, idle expiry, call timeouts, one instance per config.
 */
const created: number[] = [];
const echo = defineEnvironment({
  id: 'echo',
  version: '1.0.0',
  description: 'Repeats the action; `hang` never answers',
  turnMode: 'multi',
  taskSource: 'generator',
  configSchema: z.object({ reward: z.number().default(1), sandbox_memory_mb: z.number().int().default(512) }).strict(),
  configPolicy: { sandbox_memory_mb: { limit: 'sandbox_memory_mb' } },
  create: (config) => {
    created.push(config.reward);
    return {
      tasks: { size: () => 3, get: (_split, index) => ({ index }) },
      newEpisode: () => ({
        reset: (task) => [{ role: 'user', content: `task ${JSON.stringify(task)}` }],
        step: (action) => (action === 'hang' ? new Promise(() => undefined) : { observation: action, reward: config.reward, done: false, info: {} }),
        close: () => undefined,
      }),
    };
  },
});

describe('EpisodeStore', () => {
  const workDir = mkdtempSync(join(tmpdir(), 'ot-episodes-'));
  let store: EpisodeStore;
  const open = (o: Partial<ConstructorParameters<typeof EpisodeStore>[1]> = {}) =>
    (store = new EpisodeStore(echo, { config: {}, host: { limits: { sandbox_memory_mb: 1024 } }, idleMs: 60_000, callTimeoutMs: 1_000, maxEpisodes: 4, workDir, ...o }));

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    created.length = 0;
  });
  afterEach(async () => {
    jest.useRealTimers();
    await store.shutdown();
  });
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  const code = async (work: Promise<unknown>) =>
    work.then(
      () => 'ok',
      (e: EnvironmentError) => `${e.code}: ${e.message}`,
    );

  it('plays an episode for its owner only: another owner’s id is not found', async () => {
    open();
    const { id, messages, task } = await store.create({ split: 'test', index: 2, seed: 1 }, 'alice');
    expect(messages).toEqual([{ role: 'user', content: 'task {"index":2}' }]);
    expect(task).toEqual({ index: 2 });
    expect(await store.step(id, 'hi', 'alice')).toMatchObject({ observation: 'hi', reward: 1 });
    expect(await code(store.step(id, 'hi', 'bob'))).toBe(`ENV_EPISODE_CLOSED: Episode ${id} does not exist or has expired`);
    expect(await store.close(id, 'bob')).toBe(false);
    expect(await store.close(id, 'alice')).toBe(true);
    expect(await code(store.create({ split: 'test', index: 3, seed: 1 }))).toBe('ENV_INVALID_TASK: No test task 3 (the split has 3)');
  });

  it('caps the episodes of one owner and of all, and frees the idle ones to make room', async () => {
    open({ maxEpisodesPerOwner: 2 });
    await store.create({ seed: 1 }, 'alice');
    await store.create({ seed: 2 }, 'alice');
    expect(await code(store.create({ seed: 3 }, 'alice'))).toMatch(/^ENV_CAPACITY: You have 2 open episodes/);
    await store.create({ seed: 1 }, 'bob');
    await store.create({ seed: 2 }, 'bob');
    expect(await code(store.create({ seed: 1 }, 'carol'))).toBe('ENV_CAPACITY: Too many open episodes (4); close some or retry later');
    jest.advanceTimersByTime(60_001);
    expect((await store.create({ seed: 1 }, 'carol')).id).toBeDefined();
    expect(store.open).toBe(1);
  });

  it('closes an episode whose step took longer than the call timeout (its state is unknown)', async () => {
    open();
    const { id } = await store.create({ seed: 1 });
    const step = code(store.step(id, 'hang'));
    await jest.advanceTimersByTimeAsync(1_001);
    expect(await step).toBe('ENV_TIMEOUT: echo: step took longer than 1000 ms');
    expect(store.open).toBe(0);
  });

  it('keeps one instance per config, a caller’s config held to the operator’s ceilings', async () => {
    open();
    await store.create({ seed: 1 });
    await store.create({ seed: 1, config: { reward: 2 } });
    await store.create({ seed: 1, config: { reward: 2 } });
    expect(created).toEqual([1, 2]);
    expect(await code(store.create({ seed: 1, config: { sandbox_memory_mb: 4096 } }))).toMatch(/^ENV_CONFIG_LIMIT: /);
  });
});
