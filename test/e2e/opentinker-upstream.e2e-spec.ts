import { OpenTinkerEnvironment, type JsonObject } from '@opentinker/env-sdk';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { seedTaskKwargs } from '../../src/cli/commands/seed-tasks';
import { createOpenTinkerEnvServer } from '../../src/registry/env-server';
import { resolveEnvironment } from '../../src/registry/resolve-environment';
import {
  GomokuGame,
  MathGame,
  PyRandom,
  gomokuSample,
  staticDatasetSample,
  startUpstreamServer,
  UpstreamClient,
  UpstreamClientError,
  type UpstreamServer,
} from '../support/opentinker-upstream';

/**
 * This project against OpenTinker's own pieces (open-tinker/OpenTinker at f87fe25), both ways, as
 * those pieces work with each other: our jobs' environment client against servers that answer as its
 * `math_server.py` and `gomoku_server.py` do, and its clients' calls against `opentinker env serve
 * --protocol opentinker`. The stand-ins for OpenTinker's code are `test/support/opentinker-upstream.ts`;
 * the first block holds them to answers recorded from the real servers.
 */

interface Recorded {
  method: string;
  path: string;
  body: unknown;
  status: number;
  content_type: string;
  answer: unknown;
}
const recorded = (name: string): Recorded[] => JSON.parse(readFileSync(join(process.cwd(), 'test/fixtures/opentinker/upstream-f87fe25', `${name}_server.json`), 'utf8'));

async function send(base: string, call: Pick<Recorded, 'method' | 'path' | 'body'>): Promise<{ status: number; contentType: string; answer: unknown }> {
  const res = await fetch(base + call.path, {
    method: call.method,
    ...(call.body === null ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(call.body) }),
  });
  const text = await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  return { status: res.status, contentType, answer: contentType.includes('json') ? JSON.parse(text) : text };
}

/** A seed math row as `math_multiturn_w_interaction.py` writes it (verl's columns). */
const mathRow = (question: string, answer: string, index: number) => ({
  data_source: 'DigitalLearningGmbH/MATH-lighteval',
  prompt: [{ role: 'user', content: `${question} Let's think step by step and output the final answer within \\boxed{}.` }],
  ability: 'math',
  reward_model: { style: 'rule', ground_truth: answer },
  extra_info: { split: 'test', index, question, interaction_kwargs: { name: 'math', query: question, ground_truth: answer } },
});

describe("the stand-ins answer as OpenTinker's servers did (recorded at f87fe25)", () => {
  it.each(['math', 'gomoku'] as const)('%s_server.py: every recorded call, the same status, content type and answer', async (name) => {
    const server = await startUpstreamServer(name);
    try {
      for (const call of recorded(name)) {
        const got = await send(server.url, call);
        expect({ call: `${call.method} ${call.path} ${JSON.stringify(call.body)}`, ...got }).toEqual({
          call: `${call.method} ${call.path} ${JSON.stringify(call.body)}`,
          status: call.status,
          contentType: call.content_type,
          answer: call.answer,
        });
      }
    } finally {
      await server.close();
    }
  });
});

describe("a job's environment client against OpenTinker's math_server.py", () => {
  let server: UpstreamServer;
  beforeAll(async () => {
    server = await startUpstreamServer('math');
  });
  afterAll(() => server.close());

  it("shows the model the row's prompt after MathGame's system prompt, as OpenTinker's clients do, and sends /reset their env kwargs", async () => {
    const rows = [mathRow('What is 2+3?', '5', 0), mathRow('What is 4*4?', '16', 1)];
    // `opentinker infer math data_path=rows.parquet env_endpoint=…` makes these tasks of the rows.
    const tasks = rows.map((row, i) => seedTaskKwargs(row, `row ${i + 1}`, 'data_path=rows.parquet', 'math') as JsonObject);
    const env = await OpenTinkerEnvironment.connect({ url: server.url, jobId: 'job-1', tasks: { test: tasks } });
    for (const [i, row] of rows.entries()) {
      const upstream = staticDatasetSample(row);
      const episode = env.newEpisode();
      const messages = await episode.reset(await env.tasks.get('test', i), 0);
      // What OpenTinker's client shows its model for this row, word for word.
      expect(messages).toEqual(upstream.prompt);
      expect(messages[0]).toEqual({ role: 'system', content: MathGame.SYSTEM_PROMPT });
      expect(messages[1].content).toContain(['What is 2+3?', 'What is 4*4?'][i]);
      const reset = server.calls.filter((c) => c.path === '/reset').at(-1)!;
      expect(reset.body).toEqual({ instance_id: expect.any(String), job_id: 'job-1', ...upstream.env_kwargs });
      const right = await episode.step(`The answer is \\boxed{${row.reward_model.ground_truth}}.`);
      expect(right).toMatchObject({
        reward: 1,
        done: true,
        info: { ground_truth: row.reward_model.ground_truth, data_source: row.data_source, question: row.extra_info.question },
      });
      await episode.close();
    }
    const wrong = env.newEpisode();
    await wrong.reset(await env.tasks.get('test', 0), 0);
    expect(await wrong.step('\\boxed{6}')).toMatchObject({ reward: 0, done: true });
    // The batch statistics read back, under upstream's names.
    await env.batchStats.begin();
    const again = env.newEpisode();
    await again.reset(await env.tasks.get('test', 1), 0);
    await again.step('\\boxed{16}');
    expect(await env.batchStats.read()).toMatchObject({ total_samples: 1, games_in_step: 1, mean_final_reward: 1 });
  });
});

describe("a job's environment client against OpenTinker's gomoku_server.py", () => {
  let server: UpstreamServer;
  beforeAll(async () => {
    server = await startUpstreamServer('gomoku');
  });
  afterAll(() => server.close());

  it("plays the board of the task's initial_moves: the model sees the game's system prompt and the board, and gets its rewards", async () => {
    const initialMoves: Array<[number, number]> = [
      [4, 4],
      [3, 3],
      [4, 5],
    ];
    const env = await OpenTinkerEnvironment.connect({ url: server.url, jobId: 'job-g', tasks: { test: [{ initial_moves: initialMoves }] } });
    const episode = env.newEpisode();
    const messages = await episode.reset(await env.tasks.get('test', 0), 0);
    const game = new GomokuGame();
    game.reset({ initial_moves: initialMoves });
    expect(messages).toEqual([
      { role: 'system', content: game.getSystemPrompt() },
      { role: 'user', content: `${game.getInitialUserMessage()}\n\n${game.render()}` },
    ]);
    expect(messages[1].content).toContain('3 . . . O . . . . .\n4 . . . . X X . . .');
    expect(server.calls.find((c) => c.path === '/reset')!.body).toEqual({ instance_id: expect.any(String), job_id: 'job-g', initial_moves: initialMoves });
    // An occupied cell and a reply without a move cost 1 each; the game goes on.
    expect(await episode.step('<move>4,4</move>')).toMatchObject({ reward: -1, done: false, info: { error: 'occupied' } });
    expect(await episode.step('I pass')).toMatchObject({ reward: -1, done: false, info: { error: 'invalid_format' } });
    const valid = await episode.step('<thinking>extend</thinking><move>4,6</move>');
    expect(valid).toMatchObject({ reward: 0, info: { your_move: [4, 6] } });
    expect(valid.observation).toContain('4 . . . . X X X');
    await episode.close();
  });
});

describe("OpenTinker's clients against opentinker env serve --protocol opentinker", () => {
  const serve = async (id: string, config?: Record<string, unknown>) => {
    const env = await resolveEnvironment(id, process.cwd());
    const { apps } = await createOpenTinkerEnvServer(env, config ? { config } : {});
    const url = await apps[0].listen({ host: '127.0.0.1', port: 0 });
    return { url, apps };
  };
  let math: { url: string; apps: FastifyInstance[] };
  let gomoku: { url: string; apps: FastifyInstance[] };
  beforeAll(async () => {
    [math, gomoku] = await Promise.all([serve('math'), serve('gomoku')]);
  });
  afterAll(() => Promise.all([...math.apps, ...gomoku.apps].map((a) => a.close())));

  it("math: resets with StaticDatasetGenerator's env kwargs (no prompt) and grades the client's answers", async () => {
    const client = new UpstreamClient(math.url, 'otk-job');
    expect(await client.health()).toBe(true);
    await client.resetAll();
    await client.resetStep();
    const rows = [mathRow('What is 2+3?', '5', 0), mathRow('What is 9-7?', '2', 1)];
    const results = [];
    for (const row of rows) {
      const sample = staticDatasetSample(row);
      expect(Object.keys(sample.env_kwargs).sort()).toEqual(['data_source', 'extra_info', 'ground_truth']);
      results.push(await client.play(sample, () => `Therefore \\boxed{${row.reward_model.ground_truth}}`));
    }
    const wrong = await client.play(staticDatasetSample(rows[0]), () => '\\boxed{4}');
    expect(results.map((r) => [r.rewards, r.done])).toEqual([
      [[1], true],
      [[1], true],
    ]);
    expect(wrong.rewards).toEqual([0]);
    // The model saw what the client built, never the server's observation.
    expect(results[0].messages.slice(0, 2)).toEqual(staticDatasetSample(rows[0]).prompt);
    expect(await client.stepStats()).toMatchObject({ total_samples: 3, games_in_step: 3, completion_rate: 1, mean_final_reward: 2 / 3, job_id: 'otk-job' });
    // Our server's observation names the problem for a client that shows it.
    const { observation } = await client.start({ ground_truth: '5', extra_info: { question: 'What is 2+3?' }, data_source: 'math' });
    expect(observation).toBe('Please solve the following problem:\n\nWhat is 2+3?');
  });

  it('gomoku: places the initial_moves as GomokuGame does, X to move, and pays its rewards', async () => {
    const client = new UpstreamClient(gomoku.url, 'otk-gomoku');
    const clientGame = new GomokuGame({}, new PyRandom(7));
    // Draw until the client's generator gives an opening with both colours.
    let sample = gomokuSample(clientGame);
    const stones = () => sample.env_kwargs.initial_moves as Array<[number, number]>;
    for (let i = 0; stones().length < 2 && i < 50; i++) sample = gomokuSample(clientGame);
    const moves = stones();
    expect(moves.length).toBeGreaterThanOrEqual(2);
    const { observation, instanceId } = await client.start(sample.env_kwargs);
    // The board our server plays is the one the client rendered for its model: X on even stones, O on odd.
    for (const [i, [r, c]] of moves.entries())
      expect(
        observation
          .split('\n')
          .find((l) => l.startsWith(`${r} `))!
          .split(/\s+/)[1 + c],
      ).toBe(i % 2 === 0 ? 'X' : 'O');
    const [r0, c0] = moves[0];
    expect(await client.step(instanceId, `<thinking>…</thinking><move>${r0},${c0}</move>`)).toMatchObject({ reward: -1, done: false, info: { error: 'occupied' } });
    const free = [...Array(81).keys()].map((k): [number, number] => [Math.floor(k / 9), k % 9]).find(([r, c]) => !moves.some(([a, b]) => a === r && b === c))!;
    expect(await client.step(instanceId, `<move>${free[0]},${free[1]}</move>`)).toMatchObject({ reward: 0, done: false, info: { move: free } });
    // Forfeiting costs more than a loss: the last invalid move pays -20 (GomokuGame's REWARD_INVALID_GAME_OVER).
    const forfeit = await client.play({ ...sample, env_kwargs: { initial_moves: [] } }, () => 'no idea');
    expect(forfeit.rewards).toEqual([-1, -1, -20]);
    expect(forfeit.rewards.reduce((a, b) => a + b, 0)).toBeLessThan(GomokuGame.REWARD_LOSS);
    expect(forfeit.done).toBe(true);
    // GomokuGameStats' rates: a forfeit is neither a win, a loss nor a draw (upstream counts it a timeout).
    expect(await client.stepStats()).toMatchObject({ total_samples: 2, games_in_step: 1, win_rate: 0, loss_rate: 0, draw_rate: 0, timeout_rate: 1, mean_final_reward: -20 });
  });

  it("answers bad calls with the status codes and error shapes OpenTinker's servers answer", async () => {
    // Every error call recorded from math_server.py: the same status, and FastAPI's detail (a list with
    // `loc` for a refused body, a text otherwise).
    const errors = recorded('math').filter((c) => c.status >= 400 && c.status < 500);
    expect(errors.length).toBeGreaterThan(5);
    for (const call of errors) {
      const got = await send(math.url, call);
      const want = call.answer as { detail: unknown };
      expect({ call: `${call.method} ${call.path}`, status: got.status }).toEqual({ call: `${call.method} ${call.path}`, status: call.status });
      const detail = (got.answer as { detail: unknown }).detail;
      if (Array.isArray(want.detail)) expect((detail as Array<{ loc: unknown }>).map((d) => d.loc)).toEqual(want.detail.map((d: { loc: unknown }) => d.loc));
      else expect(detail).toBe(want.detail);
    }
    // The client raises on them as upstream's does, with the server's text.
    const client = new UpstreamClient(gomoku.url);
    const refused = await client.start({ initial_moves: [[9, 9]] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UpstreamClientError);
    expect(refused).toMatchObject({ status: 422, message: expect.stringContaining('Environment reset failed: ') });
    expect(JSON.parse((refused as UpstreamClientError).text)).toMatchObject({ detail: [{ loc: ['body', 'initial_moves', 0] }], code: 'ENV_INVALID_TASK' });
    // This project's job client reads the code and field back from the 422.
    const env = await OpenTinkerEnvironment.connect({ url: gomoku.url, retries: 1, tasks: { test: [{ initial_moves: [[9, 9]] }] } });
    await expect(env.newEpisode().reset(await env.tasks.get('test', 0), 0)).rejects.toMatchObject({
      code: 'ENV_INVALID_TASK',
      field: 'initial_moves.0',
      message: expect.stringContaining('task.initial_moves[0] must be a [row, col] pair'),
    });
  });
});
