import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp } from '../support/test-app';
import { runCli, type CliRun } from '../support/cli-process';

/**
 * `opentinker train` / `infer` of the real binary (built by `npm run build`) against a server without a
 * worker: what is submitted, from the seed's key=value overrides, and how bad tokens are refused.
 */
describe('opentinker train / infer', () => {
  let t: TestApp;
  let url: string;
  let home: string;

  function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, HOME: home, OPENTINKER_API_KEY: t.adminKey, ...env };
    delete childEnv.OPENTINKER_URL;
    return runCli(args, { env: childEnv, cwd: home });
  }

  beforeAll(async () => {
    t = await startTestApp({ worker: false });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    home = mkdtempSync(join(tmpdir(), 'cli-train-'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("submits a train job from the seed's names, scheduler_url choosing the server", async () => {
    const run = await cli([
      'train',
      'math',
      'model.preset=tiny-char',
      'model.chat_template=plain',
      'environment.config.style=equation',
      'environment.config.difficulty=3',
      'batch_size=4',
      'rollout_n=4',
      'total_steps=2',
      'test_freq=1',
      'lr=2e-4',
      'algorithm.filter_groups=true',
      `scheduler_url=${url}`,
      '--no-watch',
      '--json',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({ kind: 'train', state: 'queued' });
    const stored = await t.request('GET', `/v1/jobs/${job.id}`);
    expect(stored.body.spec).toMatchObject({
      kind: 'train',
      environment: { id: 'math', config: { style: 'equation', difficulty: 3 } },
      model: { preset: 'tiny-char', chat_template: 'plain' },
      batch_size: 4,
      total_steps: 2,
      test_freq: 1,
      algorithm: { rollout_n: 4, filter_groups: true },
      optim: { lr: 2e-4 },
    });
    await t.request('POST', `/v1/jobs/${job.id}/cancel`);
  });

  it('submits an inference job over a --config file', async () => {
    const file = join(home, 'infer.yaml');
    writeFileSync(file, 'kind: inference\nenvironment:\n  id: math\n  config: { difficulty: 1 }\nmodel: { preset: tiny-char }\nnum_tasks: 5\n');
    const run = await cli(['infer', '--config', file, 'val_batch_size=7', 'environment.config.style=equation', '--url', url, '--no-watch']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const id = /Submitted inference job ([0-9a-f-]{36})/.exec(run.stdout)![1];
    expect((await t.request('GET', `/v1/jobs/${id}`)).body.spec).toMatchObject({
      kind: 'inference',
      environment: { id: 'math', config: { difficulty: 1, style: 'equation' } },
      num_tasks: 7,
    });
    await t.request('POST', `/v1/jobs/${id}/cancel`);
  });

  it("takes the seed's README training command as written, no key refused: a game server, its data as tasks", async () => {
    mkdirSync(join(home, 'data', 'math_agentloop'), { recursive: true });
    // Rows as the seed's math_multiturn_w_interaction.py writes them.
    const source = 'DigitalLearningGmbH/MATH-lighteval';
    const row = (q: string, a: string) =>
      JSON.stringify({
        data_source: source,
        prompt: [{ role: 'user', content: q }],
        reward_model: { style: 'rule', ground_truth: a },
        extra_info: { interaction_kwargs: { name: 'math', query: q, ground_truth: a } },
      });
    // Each row's task, as the seed's StaticDatasetGenerator makes it: the prompt (shown, not sent) and the env kwargs.
    const task = (q: string, a: string) => ({
      prompt: [{ role: 'user', content: q }],
      ground_truth: a,
      extra_info: { interaction_kwargs: { name: 'math', query: q, ground_truth: a } },
      data_source: source,
    });
    writeFileSync(join(home, 'data', 'math_agentloop', 'train.jsonl'), `${row('1+1?', '2')}\n${row('2+3?', '5')}\n`);
    writeFileSync(join(home, 'data', 'math_agentloop', 'test.jsonl'), `${row('4+4?', '8')}\n`);
    const run = await cli([
      'train',
      'math',
      'tokenizer_path=Qwen/Qwen2.5-1.5B',
      'batch_size=16',
      'val_batch_size=64',
      'num_epochs=5',
      'save_freq=1000',
      'test_freq=5',
      'data_path=data/math_agentloop/train.jsonl',
      'val_data_path=data/math_agentloop/test.jsonl',
      `scheduler_url=${url}`,
      'interaction.config.env_port=8088',
      'interaction.config.env_host=127.0.0.1',
      '--no-watch',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Read 2 train tasks from data/math_agentloop/train.jsonl for the game server.');
    const id = /Submitted train job ([0-9a-f-]{36})/.exec(run.stdout)![1];
    expect((await t.request('GET', `/v1/jobs/${id}`)).body.spec).toMatchObject({
      model: { path: 'hf:Qwen/Qwen2.5-1.5B' },
      environment: {
        id: 'math',
        url: 'http://127.0.0.1:8088',
        protocol: 'opentinker',
        tasks: {
          train: [task('1+1?', '2'), task('2+3?', '5')],
          test: [task('4+4?', '8')],
        },
      },
      batch_size: 16,
      val_batch_size: 64,
      num_epochs: 5,
      save_freq: 1000,
      test_freq: 5,
    });
    await t.request('POST', `/v1/jobs/${id}/cancel`);
    // The inference command as written follows the job to write output_path: with --no-watch it says what to use.
    const infer = await cli([
      'infer',
      'math',
      'model_path=job:4f0c',
      'data_path=data/math_agentloop/test.jsonl',
      'output_path=./tmp/results.jsonl',
      'max_samples=5',
      'env_endpoint=http://127.0.0.1:8088',
      `scheduler_url=${url}`,
      '--no-watch',
    ]);
    expect(infer.code).toBe(2);
    expect(infer.stderr).toContain('output_path needs the command to follow the job');
  });

  it('refuses malformed and unknown overrides with exit code 2, naming the token, sending nothing', async () => {
    const before = (await t.request('GET', '/v1/jobs')).body.total;
    const malformed = await cli(['train', 'math', 'model.preset=tiny-char', 'batch_size', '--url', url]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('Malformed override "batch_size"');
    const unknown = await cli(['train', 'math', 'model.preset=tiny-char', 'algorithm.clip=0.2', '--url', url, '--json']);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stderr).error).toMatchObject({ field: 'algorithm.clip', exit_code: 2 });
    expect(JSON.parse(unknown.stderr).error.message).toContain('"algorithm.clip=0.2"');
    const flag = await cli(['train', 'math', '--epochs', '3', '--url', url]);
    expect(flag.code).toBe(2);
    const refused = await cli(['train', 'math', 'model.preset=tiny-char', 'rollout_n=0', '--url', url, '--no-watch']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('algorithm.rollout_n');
    expect((await t.request('GET', '/v1/jobs')).body.total).toBe(before);
  });
});

/** A real (tiny) train job and an inference job on its checkpoint, watched to the end as a user would. */
describe('opentinker train / infer, watched', () => {
  let t: TestApp;
  let url: string;
  let home: string;

  beforeAll(async () => {
    t = await startTestApp({ worker: true });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    home = mkdtempSync(join(tmpdir(), 'cli-train-watch-'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  function cli(args: string[]): Promise<CliRun> {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, OPENTINKER_API_KEY: t.adminKey };
    delete env.OPENTINKER_URL;
    return runCli([...args, '--url', url], { env, cwd: home });
  }

  it('trains, then evaluates the checkpoint, each followed to a summary with its key metrics', async () => {
    const env = ['environment.config.style=equation', 'environment.config.difficulty=1', 'environment.config.test_size=4', 'model.chat_template=plain', 'rollout.max_new_tokens=3'];
    const train = await cli([
      'train',
      'math',
      'model.preset=tiny-char',
      ...env,
      'sft.steps=2',
      'sft.examples=8',
      'sft.batch_size=4',
      'total_steps=1',
      'batch_size=2',
      'rollout_n=2',
      'val_batch_size=4',
    ]);
    expect(train.stderr).toBe('');
    expect(train.code).toBe(0);
    const id = /Submitted train job ([0-9a-f-]{36})/.exec(train.stdout)![1];
    expect(train.stdout).toContain(`Job ${id} succeeded`);
    expect(train.stdout).toMatch(/metrics {4}reward\/mean [\d.]+ · val\/accuracy [\d.]+/);
    expect(train.stdout).toContain(`Evaluate it: opentinker infer math model_path=job:${id}`);

    const infer = await cli(['infer', 'math', `model_path=job:${id}/step-0`, ...env, 'val_batch_size=4']);
    expect(infer.stderr).toBe('');
    expect(infer.code).toBe(0);
    const inferId = /Submitted inference job ([0-9a-f-]{36})/.exec(infer.stdout)![1];
    expect(infer.stdout).toMatch(/metrics {4}accuracy [\d.]+/);
    expect(infer.stdout).toContain(`Results: opentinker jobs download ${inferId} results.jsonl`);
    expect((await t.request('GET', `/v1/jobs/${inferId}`)).body.spec).toMatchObject({ num_tasks: 4, model: { path: `job:${id}/step-0` } });
  }, 120_000);
});
