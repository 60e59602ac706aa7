import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { configJsonSchema, isEnvironment, parseConfig } from '@opentinker/env-sdk';
import type { EnvironmentInstance, Message } from '@opentinker/env-sdk';
import { describeConformance } from '@opentinker/env-sdk/testing';
import type { MathTask } from '@opentinker/env-math';
import mathTool from './index';
import type { MathToolEpisode } from './episode';

/** Answers with code first, then boxes what the code printed (or a guess). */
function policy(messages: Message[], turn: number): string {
  if (turn === 0) return 'Let me compute.\n```python\nprint(6 * 7)\n```';
  const last = messages[messages.length - 1];
  return `So the answer is \\boxed{${last.content.trim().split('\n')[0]}}.`;
}

describeConformance(mathTool, { config: { test_size: 5, difficulty: 1 }, policy, maxSteps: 10, stepTimeoutMs: 10_000 });

describe('math-tool definition and config', () => {
  it('is a branded multi-turn dataset environment', () => {
    expect(isEnvironment(mathTool)).toBe(true);
    expect(mathTool).toMatchObject({ id: 'math-tool', turnMode: 'multi', taskSource: 'dataset', version: '1.0.0' });
  });

  it('fills defaults for the tool keys and keeps the math task keys', () => {
    expect(parseConfig(mathTool, {})).toEqual({
      difficulty: 2,
      seed: 0,
      test_size: 200,
      invalid_rows: 'skip',
      max_turns: 5,
      max_output_chars: 4096,
      cpu_seconds: 5,
      wall_seconds: 10,
      memory_mb: 512,
      max_processes: 6,
      file_size_mb: 16,
      scratch_mb: 64,
      max_concurrent_runs: 2,
      python_path: '/usr/bin/python3',
      sandbox_uid: 65534,
      mixed_numbers: false,
    });
    expect(() => parseConfig(mathTool, { max_turns: 0 })).toThrow(expect.objectContaining({ field: 'config.max_turns' }));
    expect(() => parseConfig(mathTool, { turns: 3 })).toThrow(expect.objectContaining({ code: 'ENV_INVALID_CONFIG', field: 'config.turns' }));
    const schema = configJsonSchema(mathTool) as { properties: Record<string, { default?: unknown }> };
    expect(schema.properties.max_output_chars.default).toBe(4096);
    expect(schema.properties.difficulty.default).toBe(2);
  });

  it('create() refuses to start without a working sandbox', async () => {
    const config = parseConfig(mathTool, { python_path: '/nonexistent/python3', test_size: 1 });
    await expect(mathTool.create(config, { workDir: tmpdir(), log: () => undefined })).rejects.toMatchObject({ code: 'ENV_SANDBOX_UNAVAILABLE' });
  });
});

/**
 * Hostile programs through real episodes: each must leave the sandbox intact and the episode going
 * with an observation that tells the model what happened.
 */
describe('math-tool episodes with hostile code (real sandbox)', () => {
  let instance: EnvironmentInstance<MathTask>;
  let task: MathTask;
  const logs: string[] = [];

  beforeAll(async () => {
    const config = parseConfig(mathTool, { test_size: 3, difficulty: 1, cpu_seconds: 1, wall_seconds: 6, max_turns: 20, max_output_chars: 400 });
    instance = await mathTool.create(config, { workDir: tmpdir(), log: (m) => logs.push(m) });
    task = await instance.tasks.get('test', 0);
  });

  afterAll(async () => {
    await instance.close?.();
  });

  const py = (code: string) => `I will run this.\n\`\`\`python\n${code}\n\`\`\``;

  it('a whole episode: hostile programs one after another, then the right answer still earns 1', async () => {
    const ep = instance.newEpisode() as MathToolEpisode;
    const first = await ep.reset(task, 1);
    expect(first[0].role).toBe('system');
    expect(first[first.length - 1]).toMatchObject({ role: 'user' });

    const expectContinues = async (code: string, check: (observation: string, info: Record<string, unknown>) => void) => {
      const r = await ep.step(py(code));
      expect(r.done).toBe(false);
      expect(r.reward).toBe(0);
      expect(r.observationRole).toBe('tool');
      check(r.observation, r.info);
    };

    // Normal code.
    await expectContinues('print(sum(range(10)))', (o) => expect(o).toBe('45\n'));
    // Infinite loop: stopped at the CPU limit.
    await expectContinues('while True:\n    pass', (o, info) => {
      expect(o).toBe('[time limit: the program used more than 1 s of CPU time and was stopped]');
      expect(info.run_status).toBe('cpu_limit');
    });
    // Fork bomb: forks fail, the program carries on.
    await expectContinues(
      'import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print("fork failed:", e.strerror, n < 10)',
      (o) => expect(o).toBe('fork failed: Resource temporarily unavailable True\n'),
    );
    // 10 GB allocation: MemoryError.
    await expectContinues('x = bytearray(10 * 1024**3)', (o, info) => {
      expect(o).toMatch(/MemoryError\n$/);
      expect(info.run_status).toBe('error');
    });
    // /etc/passwd and the server's files.
    await expectContinues('print(open("/etc/passwd").read())', (o) => expect(o).toMatch(/FileNotFoundError: \[Errno 2\] No such file or directory: '\/etc\/passwd'\n$/));
    const repoFile = join(process.cwd(), 'package.json');
    await expectContinues(`print(open(${JSON.stringify(repoFile)}).read())`, (o) => expect(o).toMatch(/FileNotFoundError/));
    await expectContinues('import os\nprint(os.listdir("/"))', (o) => expect(o).not.toMatch(/'etc'|'home'|'root'|'work'/));
    // A socket to 127.0.0.1.
    await expectContinues('import socket\nsocket.create_connection(("127.0.0.1", 6379), timeout=2)', (o) =>
      expect(o).toMatch(/\n(ConnectionRefusedError|OSError|TimeoutError): [^\n]*\n$/),
    );
    // 100 MB of output: truncated with a marker.
    await expectContinues('import sys\nfor _ in range(100):\n    sys.stdout.write("y" * 1048575 + "\\n")', (o, info) => {
      expect(o).toMatch(
        /^y{300}\n\[\.\.\. output truncated: the program printed more than 1 MiB and was stopped; the first 300 and the last 100 characters it printed are shown \.\.\.\]\n[y\n]{100}$/,
      );
      expect(info).toMatchObject({ run_status: 'output_limit', truncated: true });
    });
    // A huge file: the file-size limit.
    await expectContinues('f = open("/tmp/big", "wb")\nfor _ in range(100):\n    f.write(b"z" * 1048576)', (o) => expect(o).toMatch(/OSError: \[Errno 27\] File too large\n$/));
    // Sleeping past the wall clock.
    await expectContinues('import time\nprint("waiting", flush=True)\ntime.sleep(60)', (o, info) => {
      expect(o).toBe('waiting\n[time limit: the program ran for more than 6 s and was stopped]');
      expect(info.run_status).toBe('timeout');
    });

    const last = await ep.step(`\\boxed{${task.ground_truth}}`);
    expect(last).toMatchObject({ reward: 1, done: true, info: { correct: true, reason: 'answer', code_runs: 11 } });
    await ep.close();
    expect(logs.filter((l) => l.includes('sandbox error'))).toEqual([]);
  }, 60_000);

  it('closing an episode stops its running code', async () => {
    const ep = instance.newEpisode();
    await ep.reset(task, 1);
    const started = Date.now();
    const pending = ep.step(py('import time\ntime.sleep(30)'));
    await new Promise((r) => setTimeout(r, 300));
    await ep.close();
    await expect(pending).rejects.toMatchObject({ code: 'ENV_EPISODE_CLOSED' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('runs episodes concurrently with results kept apart', async () => {
    const results = await Promise.all(
      [0, 1, 2, 3, 4].map(async (i) => {
        const ep = instance.newEpisode();
        await ep.reset(task, i);
        const r = await ep.step(py(`print(${i} ** 2)`));
        await ep.close();
        return r.observation;
      }),
    );
    expect(results).toEqual(['0\n', '1\n', '4\n', '9\n', '16\n']);
  });
});
