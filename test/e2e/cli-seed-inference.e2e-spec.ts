import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, runCli, type CliRun } from '../support/cli-process';
import { GomokuGame, MathGame, staticDatasetSample, startUpstreamServer, type UpstreamServer } from '../support/opentinker-upstream';
import { startTestApp, waitFor, waitForState, type TestApp } from '../support/test-app';
import { unusedPort } from '../support/unused-port';

/**
 * The seed's (OpenTinker's) README inference command, as its docs write it, through the real binary after
 * `opentinker login`, against a real server with a worker and a real game server (`opentinker env serve
 * math --protocol opentinker`, behind a proxy that records what it is asked):
 *
 *   python opentinker/client/math_inference.py model_path=<model_name> data_path=data/math/test.parquet \
 *     output_path=./tmp/results.jsonl max_samples=5 env_endpoint=http://<client>:<env_port> scheduler_url=http://<server>:<port>
 *
 * and the same keys over the seed's client config (`--config-name math_inference_scheduler_config.yaml`,
 * the file the script loads by default). The user is a plain user, the model a model folder where the
 * command runs, the data the seed's parquet rows (verl's columns with `extra_info.interaction_kwargs`).
 */
const SLOW = 180_000;

/** The seed's `opentinker/client/client_config/math_inference_scheduler_config.yaml`, as it ships. */
const SEED_CONFIG = `# Math Inference with Scheduler Configuration
scheduler_url: http://0.0.0.0:8789
scheduler_api_key: otk_98b8db24ccd64c92e1fdd9a232e209fa # Optional API key for authentication
model_path: null
tokenizer_path: null
tensor_parallel_size: 1
num_gpus: null
gpu_memory_utilization: 0.9
max_model_len: null
trust_remote_code: true
temperature: 0.0
top_p: 1.0
max_new_tokens: 4096
data_path: null
output_path: null
max_samples: null
env_endpoint: http://0.0.0.0:8088
multi_turn:
  max_user_turns: 0
  max_assistant_turns: 1
`;

const QUESTIONS = [
  ['What is 1+1?', '2'],
  ['What is 2+3?', '5'],
  ['What is 4*4?', '16'],
  ['What is 9-7?', '2'],
  ['What is 10/2?', '5'],
  ['What is 3+3?', '6'],
  ['What is 7+1?', '8'],
];
const INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}.";
const question = (i: number) => `${QUESTIONS[i][0]} ${INSTRUCTION}`;
const SOURCE = 'DigitalLearningGmbH/MATH-lighteval';

/** Test rows as the seed's math_multiturn_w_interaction.py writes them (verl's parquet columns). */
function agentLoopParquet(): Buffer {
  const rows = QUESTIONS.map(([q, a], index) => ({ q, a, index, prompt: question(index) }));
  return Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'data_source', data: rows.map(() => SOURCE) },
        { name: 'prompt', data: rows.map((r) => [{ role: 'user', content: r.prompt }]) },
        { name: 'ability', data: rows.map(() => 'math') },
        { name: 'reward_model', data: rows.map((r) => ({ style: 'rule', ground_truth: r.a })) },
        {
          name: 'extra_info',
          data: rows.map((r) => ({
            split: 'test',
            index: r.index,
            answer: `\\boxed{${r.a}}`,
            question: r.q,
            interaction_kwargs: { name: 'math', query: r.prompt, ground_truth: r.a },
          })),
        },
      ],
    }),
  );
}

/** Test rows as the seed's math.py writes them (JSONL: prompt, ground_truth, data_source). */
function mathJsonl(): string {
  return QUESTIONS.map(([, a], i) => JSON.stringify({ prompt: [{ role: 'user', content: question(i) }], ground_truth: a, data_source: SOURCE }) + '\n').join('');
}

interface Seen {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** A proxy in front of the game server that records every call (method, path, JSON body). */
async function recordingProxy(target: number): Promise<{ port: number; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, unknown> = {};
      try {
        body = raw.length ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
      } catch {
        // not JSON: recorded without a body
      }
      seen.push({ method: req.method!, path: req.url!, body });
      const upstream = httpRequest({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers }, (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, seen, server };
}

describe("the seed's README inference command, end to end", () => {
  let t: TestApp;
  let url: string;
  let home: string;
  let game: ChildProcess;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  /** Stand-ins for OpenTinker's own math_server.py and gomoku_server.py (test/support/opentinker-upstream.ts). */
  let upstreamMath: UpstreamServer;
  let upstreamGomoku: UpstreamServer;
  let userKey: string;
  let login: CliRun;

  /** The keys of the seed's README command, as written (model_path=<model_name> a folder here). */
  const readmeKeys = (data: string, output: string) => [
    'model_path=models/tiny-math',
    `data_path=${data}`,
    `output_path=${output}`,
    'max_samples=5',
    `env_endpoint=http://127.0.0.1:${proxy.port}`,
    `scheduler_url=${url}`,
  ];

  function cli(args: string[]): Promise<CliRun> {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
    delete env.OPENTINKER_URL;
    delete env.OPENTINKER_API_KEY;
    return runCli(args, { env, cwd: home });
  }

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'cli-seed-infer-'));
    // The model a seed user names with model_path: a Hugging Face folder where the command runs.
    const config = { ...modelPreset('tiny-char'), max_position_embeddings: 256 };
    await saveHfModelDir(join(home, 'models', 'tiny-math'), { config, weights: initWeights(config, 7), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
    // OpenTinker's servers' own system prompts and boards need a longer context.
    const long = { ...modelPreset('tiny-char'), max_position_embeddings: 2048 };
    await saveHfModelDir(join(home, 'models', 'tiny-long'), { config: long, weights: initWeights(long, 7), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
    mkdirSync(join(home, 'data', 'math'), { recursive: true });
    writeFileSync(join(home, 'data', 'math', 'test.parquet'), agentLoopParquet());
    writeFileSync(join(home, 'data', 'math', 'test.jsonl'), mathJsonl());
    writeFileSync(join(home, 'math_inference_scheduler_config.yaml'), SEED_CONFIG);

    const gamePort = await unusedPort();
    game = spawn(process.execPath, [BIN, 'env', 'serve', 'math', '--protocol', 'opentinker', '--port', String(gamePort)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    game.stdout!.on('data', (d) => (out += d));
    game.stderr!.on('data', (d) => (out += d));
    await waitFor(async () => out.includes(' served on '), 30_000, 100).catch(() => {
      throw new Error(`env serve did not start: ${out}`);
    });
    proxy = await recordingProxy(gamePort);
    [upstreamMath, upstreamGomoku] = await Promise.all([startUpstreamServer('math'), startUpstreamServer('gomoku')]);
    const hostPort = (u: string) => new URL(u).host;

    // A plain user's job may reach these loopback game servers because the operator lists them.
    t = await startTestApp({
      config: { model_roots: [join(home, 'models')], environment_url_allow: [`127.0.0.1:${proxy.port}`, hostPort(upstreamMath.url), hostPort(upstreamGomoku.url)] },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    userKey = (await t.request('POST', '/v1/users', { body: { name: 'seed-user' } })).body.api_key.key;
    // Step one for a seed user here: the key is saved, and every command after it uses it.
    login = await cli(['login', '--url', url, '--key', userKey]);
  }, SLOW);

  afterAll(async () => {
    await t?.close();
    proxy?.server.close();
    await Promise.all([upstreamMath?.close(), upstreamGomoku?.close()]);
    if (game && game.exitCode === null) {
      const exited = new Promise((resolve) => game.once('exit', resolve));
      game.kill('SIGTERM');
      await exited;
    }
    rmSync(home, { recursive: true, force: true });
  });

  /** The command's own lines, in order, for a job that succeeded and saved its results at `output`. */
  function expectPrinted(run: CliRun, data: string, output: string): string {
    expect(run.code).toBe(0);
    const id = /^Submitted inference job ([0-9a-f-]{36})\.$/m.exec(run.stdout)?.[1];
    expect(id).toBeDefined();
    const lines = run.stdout.split('\n');
    const at = (text: string) => lines.findIndex((l) => l.startsWith(text));
    const order = [`Read 7 test tasks from ${data} for the game server.`, `Submitted inference job ${id}.`, `Job ${id} succeeded`, `Saved results.jsonl to ${output}`];
    for (const text of order) expect(lines).toContainEqual(expect.stringContaining(text));
    expect(order.map(at)).toEqual([...order.map(at)].sort((a, b) => a - b));
    expect(run.stdout).toMatch(/^progress 5\/5 reward [\d.]+, accuracy [\d.]+( \| .*)?$/m);
    return id!;
  }

  /** Exactly 5 result lines with the fields docs/api.md lists, each one episode the game server played. */
  function expectResults(path: string, jobId: string): void {
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(5);
    const results = lines.map((l) => JSON.parse(l));
    results.forEach((r, i) => {
      expect(Object.keys(r).sort()).toEqual(['finish', 'ground_truth', 'info', 'messages', 'response', 'reward', 'sample', 'task', 'task_index', 'tokens', 'turn_rewards']);
      expect(r).toMatchObject({
        task_index: i,
        sample: 0,
        task: { prompt: [{ role: 'user', content: question(i) }], ground_truth: QUESTIONS[i][1] },
        messages: [
          { role: 'user', content: question(i) },
          { role: 'assistant', content: r.response },
        ],
        reward: 0,
        turn_rewards: [0],
        finish: expect.stringMatching(/^(done|length)$/),
        info: expect.objectContaining({ correct: false, ground_truth: QUESTIONS[i][1] }),
        ground_truth: QUESTIONS[i][1],
        tokens: { prompt: expect.any(Number), generated: expect.any(Number) },
      });
      expect(r.tokens.generated).toBeGreaterThan(0);
    });
    // The job checked the server, then each episode was one instance there: reset, one step with the model's answer, finalize.
    const calls = proxy.seen.filter((c) => c.body.job_id === jobId || c.path.includes(`job_id=${jobId}`));
    expect(calls[0].path).toBe(`/stats/reset_all?job_id=${jobId}`);
    const resets = calls.filter((c) => c.path === '/reset');
    expect(resets.map((c) => c.body.ground_truth)).toEqual(QUESTIONS.slice(0, 5).map(([, a]) => a));
    expect(new Set(resets.map((c) => c.body.instance_id)).size).toBe(5);
    for (const [i, reset] of resets.entries()) {
      const id = reset.body.instance_id;
      const episode = calls.filter((c) => c.body.instance_id === id);
      expect(episode.map((c) => c.path)).toEqual(['/reset', '/step', '/finalize']);
      expect(episode[1].body.action).toBe(results[i].response);
    }
  }

  it(
    'runs as written after opentinker login, no key refused: 5 episodes played on the game server, results at output_path',
    async () => {
      expect(login).toMatchObject({ code: 0, stderr: '' });
      expect(login.stdout).toContain(`Logged in to ${url} as seed-user (user).`);

      const run = await cli(['infer', 'math', ...readmeKeys('data/math/test.parquet', './tmp/results.jsonl')]);
      expect(run.stderr).toBe('');
      const id = expectPrinted(run, 'data/math/test.parquet', './tmp/results.jsonl');
      // The login's key submitted it: the plain user reads it as their own job.
      const job = (await t.request('GET', `/v1/jobs/${id}`, { key: userKey })).body;
      expect(job.state).toBe('succeeded');
      expect(job.spec).toMatchObject({
        kind: 'inference',
        num_tasks: 5,
        model: { path: join(home, 'models', 'tiny-math') },
        environment: { id: 'math', url: `http://127.0.0.1:${proxy.port}`, protocol: 'opentinker' },
      });
      expect(job.spec.environment.tasks.test).toHaveLength(7);
      expectResults(join(home, 'tmp', 'results.jsonl'), id);
    },
    SLOW,
  );

  it(
    "runs the same keys over the seed's client config (--config-name), the login's key winning over the config's example key",
    async () => {
      const run = await cli(['infer', 'math', '--config-name', 'math_inference_scheduler_config.yaml', ...readmeKeys('data/math/test.jsonl', './tmp/config/results.jsonl')]);
      // Only notes: the config's example key set aside, and the vLLM keys that change nothing here.
      const stderr = run.stderr.trim().split('\n');
      expect(stderr.every((l) => l.startsWith('opentinker: note: '))).toBe(true);
      expect(stderr).toContain('opentinker: note: scheduler_api_key of --config is not used: the saved login (opentinker login) gives the key');
      const id = expectPrinted(run, 'data/math/test.jsonl', './tmp/config/results.jsonl');
      expect((await t.request('GET', `/v1/jobs/${id}`)).body.spec).toMatchObject({
        num_tasks: 5,
        rollout: { temperature: 0, top_p: 1, max_turns: 1, max_response_tokens: 4096 },
        environment: { url: `http://127.0.0.1:${proxy.port}`, protocol: 'opentinker' },
      });
      expectResults(join(home, 'tmp', 'config', 'results.jsonl'), id);
    },
    SLOW,
  );

  it(
    "runs against OpenTinker's own math_server.py: the model sees MathGame's system prompt and the row's prompt, the server gets its env kwargs",
    async () => {
      const run = await cli([
        'infer',
        'math',
        ...readmeKeys('data/math/test.parquet', './tmp/upstream/results.jsonl').map((k) =>
          k.startsWith('env_endpoint=') ? `env_endpoint=${upstreamMath.url}` : k.startsWith('model_path=') ? 'model_path=models/tiny-long' : k,
        ),
      ]);
      expect({ code: run.code, stderr: run.stderr, stdout: run.code === 0 ? '' : run.stdout }).toEqual({ code: 0, stderr: '', stdout: '' });
      const results = readFileSync(join(home, 'tmp', 'upstream', 'results.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(results).toHaveLength(5);
      const resets = upstreamMath.calls.filter((c) => c.path === '/reset');
      expect(resets).toHaveLength(5);
      for (const [i, r] of results.entries()) {
        // What OpenTinker's own client shows its model for this row (not the server's "Please solve the following problem:").
        const upstream = staticDatasetSample({
          data_source: SOURCE,
          prompt: [{ role: 'user', content: question(i) }],
          reward_model: { style: 'rule', ground_truth: QUESTIONS[i][1] },
          extra_info: (resets[i].body as { extra_info: Record<string, never> }).extra_info,
        });
        expect(r.messages).toEqual([...upstream.prompt, { role: 'assistant', content: r.response }]);
        expect(r.messages[0]).toEqual({ role: 'system', content: MathGame.SYSTEM_PROMPT });
        expect(resets[i].body).toEqual({ instance_id: expect.any(String), job_id: expect.any(String), ...upstream.env_kwargs });
        expect(resets[i].body).toMatchObject({ ground_truth: QUESTIONS[i][1], data_source: SOURCE, extra_info: { question: QUESTIONS[i][0], index: i } });
        // The reward is the server's grade of the answer.
        const grader = new MathGame();
        grader.reset({ ground_truth: QUESTIONS[i][1] });
        expect(r.reward).toBe(grader.step(r.response).reward);
      }
    },
    SLOW,
  );

  it(
    "plays OpenTinker's own gomoku_server.py from a task's initial_moves: the board the model sees, the rewards the server pays",
    async () => {
      const initialMoves = [
        [4, 4],
        [3, 3],
        [4, 5],
      ];
      const submitted = await t.request('POST', '/v1/jobs', {
        key: userKey,
        body: {
          kind: 'inference',
          num_tasks: 1,
          model: { path: join(home, 'models', 'tiny-long') },
          environment: { id: 'gomoku', url: upstreamGomoku.url, protocol: 'opentinker', tasks: { test: [{ initial_moves: initialMoves }] } },
          rollout: { max_turns: 3, max_new_tokens: 8 },
        },
      });
      expect(submitted.status).toBe(201);
      const job = await waitForState(t, submitted.body.id, ['succeeded', 'failed'], SLOW);
      expect(job).toMatchObject({ state: 'succeeded', error: null });
      const [result] = (await t.request('GET', `/v1/jobs/${job.id}/artifacts/results.jsonl`, { key: userKey })).text
        .trim()
        .split('\n')
        .map((l: string) => JSON.parse(l));
      const game = new GomokuGame();
      game.reset({ initial_moves: initialMoves });
      expect(result.messages.slice(0, 2)).toEqual([
        { role: 'system', content: game.getSystemPrompt() },
        { role: 'user', content: `${game.getInitialUserMessage()}\n\n${game.render()}` },
      ]);
      expect(result.messages[1].content).toContain('3 . . . O . . . . .\n4 . . . . X X . . .');
      // Each turn's reward is the server's: -1 for a reply it cannot play, 0 for a move, ±10 for a result.
      const steps = upstreamGomoku.calls.filter((c) => c.path === '/step');
      expect(result.turn_rewards).toEqual(steps.map((c) => (c.answer as { reward: number }).reward));
      expect(steps.map((c) => (c.body as { action: string }).action)).toEqual(
        result.messages.filter((m: { role: string }) => m.role === 'assistant').map((m: { content: string }) => m.content),
      );
      for (const reward of result.turn_rewards) expect([-1, 0, 10, -10]).toContain(reward);
    },
    SLOW,
  );
});
