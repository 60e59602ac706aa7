import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environmentSpec } from './rl-spec';
import { createEnvServer } from '../registry/env-server';
import { loadRegistry } from '../registry/registry-loader';
import type { RunnerPaths } from '../runner/run-context';
import type { RunnerPolicy } from '../runner/runner-protocol';
import { openEnvironment } from './environment-handle';

const home = mkdtempSync(join(tmpdir(), 'ot-envh-'));
const paths: RunnerPaths = { hostRoot: process.cwd(), pluginsDir: join(home, 'plugins'), home, jobsDir: join(home, 'jobs'), datasetsDir: join(home, 'datasets'), modelRoots: [] };
/** The policy of an admin's job on a server with default settings (loopback environment servers allowed). */
const policy: RunnerPolicy = {
  environmentHost: { limits: { sandbox_memory_mb: 1024 }, settings: {} },
  modelRoots: [],
  remoteEnvironments: { allow: [], allowPublic: true, allowLoopback: true },
} as RunnerPolicy;
const ctx = { paths, policy, workDir: join(home, 'work'), log: () => undefined };

afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('openEnvironment', () => {
  it('opens an installed environment with its validated config and plays an episode', async () => {
    const handle = await openEnvironment(environmentSpec.parse({ id: 'math', config: { test_size: 3 } }), ctx);
    try {
      expect(handle.meta).toMatchObject({ id: 'math', turnMode: 'single' });
      expect(handle.env.tasks.size('test')).toBe(3);
      const episode = handle.env.newEpisode();
      const messages = await episode.reset(await handle.env.tasks.get('test', 0), 1);
      expect(messages.at(-1)?.role).toBe('user');
      const result = await episode.step('no idea');
      expect(result.done).toBe(true);
      await episode.close();
    } finally {
      await handle.close();
      await handle.close();
    }
  });

  it('names the known environments for an unknown id, and the config key at fault', async () => {
    await expect(openEnvironment(environmentSpec.parse({ id: 'nope' }), ctx)).rejects.toThrow(/^environment\.id: Unknown environment nope \(known: .*math/);
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', config: { difficulty: 'hard' } }), ctx)).rejects.toThrow(/^environment\.config\.difficulty: /);
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', config: { bogus: 1 } }), ctx)).rejects.toThrow(/^environment\.config\.bogus: /);
  });

  it('maps dataset ids to the train and test paths', async () => {
    const id = '0b6c3f4e-1d2a-4c5b-8e9f-0a1b2c3d4e5f';
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', dataset: id }), ctx)).rejects.toThrow(/^environment\.dataset: dataset .* has no file/);
    mkdirSync(join(paths.datasetsDir, id), { recursive: true });
    const rows = [1, 2, 3, 4].map((n) => JSON.stringify({ prompt: [{ role: 'user', content: `${n}+${n}=` }], reward_model: { ground_truth: String(2 * n) } }));
    writeFileSync(join(paths.datasetsDir, id, 'data.jsonl'), rows.join('\n') + '\n');
    const handle = await openEnvironment(environmentSpec.parse({ id: 'math', dataset: id, val_dataset: id }), ctx);
    try {
      expect(handle.env.tasks.size('train')).toBe(4);
      expect(handle.env.tasks.size('test')).toBe(4);
    } finally {
      await handle.close();
    }
    // A path from the spec never reaches the file system: only the server sets the dataset keys.
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', dataset: id, config: { train_path: '/x' } }), ctx)).rejects.toThrow(
      /^environment\.config\.train_path: config\.train_path cannot be set in a request/,
    );
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', config: { source: 'dataset', test_path: '/etc/passwd' } }), ctx)).rejects.toThrow(
      /^environment\.config\.test_path: .*cannot be set/,
    );
    await expect(openEnvironment(environmentSpec.parse({ id: 'gomoku', dataset: id }), ctx)).rejects.toThrow(/^environment\.dataset: environment gomoku reads no train dataset/);
  });

  it('connects to a remote environment server when url is set, and checks it serves that id', async () => {
    const math = (await loadRegistry({ hostRoot: process.cwd(), pluginsDir: paths.pluginsDir })).find((r) => r.id === 'math')!.environment!;
    const { app } = await createEnvServer(math, { token: 'secret' });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const handle = await openEnvironment(environmentSpec.parse({ id: 'math', url, token: 'secret', config: { format_penalty: -1 } }), ctx);
      try {
        expect(handle.meta).toMatchObject({ id: 'math', turnMode: 'single' });
        const episode = handle.env.newEpisode();
        const messages = await episode.reset(await handle.env.tasks.get('test', 0), 1);
        expect(messages.at(-1)?.role).toBe('user');
        // The episode runs under the job's config: an answerless response gets its format penalty.
        expect((await episode.step('no answer here')).reward).toBe(-1);
        await episode.close();
      } finally {
        await handle.close();
      }
      await expect(openEnvironment(environmentSpec.parse({ id: 'gomoku', url, token: 'secret' }), ctx)).rejects.toThrow(
        /^environment\.id: the server at .* serves environment math, not gomoku/,
      );
      await expect(openEnvironment(environmentSpec.parse({ id: 'math', url, dataset: '0b6c3f4e-1d2a-4c5b-8e9f-0a1b2c3d4e5f' }), ctx)).rejects.toThrow(/^environment\.dataset: /);
    } finally {
      await app.close();
    }
  });

  it('says only "unreachable" when the remote server cannot be reached (no connection details)', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise((resolve) => probe.close(resolve)); // nothing listens there now
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', url }), ctx)).rejects.toThrow(
      new RegExp(`^environment\\.url: Environment server ${url.replace(/\./g, '\\.')} is unreachable$`),
    );
  });

  it("refuses a loopback server to a plain user's job, before connecting", async () => {
    const user = { ...ctx, policy: { ...policy, remoteEnvironments: { ...policy.remoteEnvironments, allowLoopback: false } } };
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', url: 'http://127.0.0.1:9/' }), user)).rejects.toThrow(
      /^environment\.url: environment\.url 127\.0\.0\.1:9 is not an environment server this server may reach/,
    );
    await expect(openEnvironment(environmentSpec.parse({ id: 'math', url: 'http://localhost:9/' }), user)).rejects.toThrow(/is not an environment server this server may reach/);
  });
});
