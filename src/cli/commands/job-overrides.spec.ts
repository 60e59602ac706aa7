import { parseJobSpec } from '../../kinds/job-kinds';
import { CliError } from './cli-error';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildJobSpec, parseValue, SEED_KEYS } from './job-overrides';
import { seedTaskKwargs } from './seed-tasks';

/** The usage error a call throws (exit code 2), or fails the test. */
function usageError(fn: () => unknown): CliError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    return error as CliError;
  }
  throw new Error('expected a usage error');
}

describe('train/infer key=value overrides', () => {
  it("carries over an OpenTinker seed command: the seed's names land on our spec, and the server accepts it", () => {
    const { spec, url, uploads } = buildJobSpec('train', 'math', [
      'tokenizer_path=/models/qwen2.5-0.5b',
      'batch_size=16',
      'val_batch_size=64',
      'num_epochs=5',
      'save_freq=1000',
      'test_freq=5',
      'data_path=data/gsm8k/train.parquet',
      'val_data_path=data/gsm8k/test.parquet',
      'scheduler_url=http://gpu-box:8780',
      'interaction.config.env_host=env-box',
      'interaction.config.env_port=8088',
      'adv_estimator=grpo',
      'rollout_n=8',
      'lr=1e-6',
      'kl_loss_coef=0.001',
    ]);
    expect(url).toBe('http://gpu-box:8780');
    // Local files are uploaded by the command before it submits: the spec never carries a path.
    expect(uploads).toEqual([
      { key: 'dataset', path: 'data/gsm8k/train.parquet', token: 'data_path=data/gsm8k/train.parquet' },
      { key: 'val_dataset', path: 'data/gsm8k/test.parquet', token: 'val_data_path=data/gsm8k/test.parquet' },
    ]);
    expect(spec).toEqual({
      kind: 'train',
      environment: { id: 'math', url: 'http://env-box:8088', protocol: 'opentinker' },
      model: { path: '/models/qwen2.5-0.5b' },
      batch_size: 16,
      val_batch_size: 64,
      num_epochs: 5,
      save_freq: 1000,
      test_freq: 5,
      algorithm: { adv_estimator: 'grpo', rollout_n: 8, kl_loss_coef: 0.001 },
      optim: { lr: 1e-6 },
    });
    expect(() => parseJobSpec(spec)).not.toThrow();
  });

  it('takes any dotted path of our spec, values as JSON when they parse', () => {
    const { spec } = buildJobSpec('train', 'math', [
      'model.preset=tiny-char',
      'model.chat_template=plain',
      'algorithm.clip_ratio=0.28',
      'algorithm.filter_groups=true',
      'environment.config.difficulty=3',
      'environment.config.style=equation',
      'optim.betas=[0.9,0.95]',
      'name=my run',
    ]);
    expect(spec).toMatchObject({
      model: { preset: 'tiny-char', chat_template: 'plain' },
      algorithm: { clip_ratio: 0.28, filter_groups: true },
      environment: { id: 'math', config: { difficulty: 3, style: 'equation' } },
      optim: { betas: [0.9, 0.95] },
      name: 'my run',
    });
    expect(parseJobSpec(spec).spec).toMatchObject({ algorithm: { clip_ratio: 0.28, rollout_n: 8 } });
    expect([parseValue('16'), parseValue('true'), parseValue('"16"'), parseValue('job:abc'), parseValue('a=b')]).toEqual([16, true, '16', 'job:abc', 'a=b']);
  });

  it('maps an uploaded dataset id to environment.dataset, and inference data to the split it runs on', () => {
    const id = '0b6f6d5e-1c2a-4d3b-9e8f-0123456789ab';
    expect(buildJobSpec('train', 'math', ['model.preset=tiny-char', `data_path=${id}`]).spec.environment).toEqual({ id: 'math', dataset: id });
    const built = buildJobSpec('inference', 'math', ['model_path=job:4f0c', 'data_path=data/test.jsonl', 'val_batch_size=50', 'batch_size=8']);
    const infer = built.spec;
    expect(infer).toEqual({ kind: 'inference', environment: { id: 'math' }, model: { path: 'job:4f0c' }, num_tasks: 50, batch_size: 8 });
    expect(built.uploads).toEqual([{ key: 'val_dataset', path: 'data/test.jsonl', token: 'data_path=data/test.jsonl' }]);
    expect(() => parseJobSpec(infer)).not.toThrow();
  });

  it('applies the overrides over --config, the command line winning, including the model', () => {
    const base = { kind: 'train', environment: { id: 'gomoku', config: { board_size: 9 } }, model: { preset: 'tiny-char' }, batch_size: 4 };
    const { spec } = buildJobSpec('train', 'math', ['batch_size=8', 'model_path=job:1234'], base);
    expect(spec).toEqual({ kind: 'train', environment: { id: 'math', config: { board_size: 9 } }, model: { path: 'job:1234' }, batch_size: 8 });
    expect(base.model).toEqual({ preset: 'tiny-char' });
    expect(buildJobSpec('train', undefined, [], base).spec.environment).toEqual(base.environment);
  });

  it('names the offending token of a malformed or unknown override', () => {
    expect(usageError(() => buildJobSpec('train', 'math', ['model.preset=tiny-char', 'batch_size'])).message).toContain('Malformed override "batch_size"');
    expect(usageError(() => buildJobSpec('train', 'math', ['=3'])).message).toContain('Malformed override "=3"');
    const unknown = usageError(() => buildJobSpec('train', 'math', ['model.preset=tiny-char', 'batchsize=16']));
    expect(unknown.message).toContain('Unknown key "batchsize" in "batchsize=16"');
    expect(unknown.message).toContain('batch_size');
    expect(usageError(() => buildJobSpec('train', 'math', ['algorithm.clip_ration=0.2'])).message).toContain('"algorithm.clip_ration=0.2"');
    expect(usageError(() => buildJobSpec('train', 'math', ['algorithm..clip_ratio=0.2'])).message).toContain('Unknown key');
    expect(usageError(() => buildJobSpec('inference', 'math', ['model_path=x', 'num_epochs=3'])).message).toContain('Unknown key "num_epochs"');
    expect(usageError(() => buildJobSpec('train', 'math', ['batch_size=16'])).message).toContain('Name the model');
    expect(usageError(() => buildJobSpec('train', undefined, ['model.preset=tiny-char'])).message).toContain('Name the environment');
  });

  it('refuses contradictions and half a remote environment', () => {
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'model_path=b'])).message).toBe('"model_path=b" contradicts "model_path=a"');
    expect(buildJobSpec('train', 'math', ['model_path=a', 'tokenizer_path=a']).spec.model).toEqual({ path: 'a' });
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'model.preset=tiny-char'])).message).toContain('a job has one model');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'interaction.config.env_host=h'])).message).toContain('needs interaction.config.env_port');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'interaction.config.env_host=h', 'interaction.config.env_port=http'])).message).toContain('port');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a'], { kind: 'sleep' })).message).toContain('--config holds a "sleep" job');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'environment.config=3', 'environment.config.difficulty=2'])).message).toContain('inside config');
  });
});

/** A sample value for each of the seed's keys, of the type the seed gives it. */
const SAMPLE: Record<string, string> = {
  model_path: '/models/m',
  logger_backends: 'console,tensorboard',
  project_name: 'runs',
  tokenizer_path: '/models/m',
  scheduler_url: 'http://box:8780',
  server_url: 'http://box:8780',
  scheduler_api_key: 'key-1',
  'interaction.config.env_host': 'h',
  'interaction.config.env_port': '8088',
  'interaction.config.env_endpoint': 'http://h:8088',
  'interaction.config.env_shards': '2',
  'interaction.name': 'gomoku',
  data_path: 'd/train.parquet',
  val_data_path: 'd/test.parquet',
  output_path: './tmp/results.jsonl',
  env_endpoint: 'http://h:8091',
  algorithm: 'agent_loop',
  adv_estimator: 'grpo_per_step',
  'lora.lora_rank': '64',
  'lora.target_modules': 'all-linear',
  experiment_name: 'run',
  temperature: '0.7',
  top_p: '0.9',
  lr: '1e-6',
  'lora.lr': '1e-6',
  kl_loss_coef: '0.001',
  'lora.lora_alpha': '32',
  max_new_tokens: '4096',
};

describe("the seed's keys", () => {
  /** What one key given alone (beside a model and, for env_shards, a game server) does. */
  function alone(kind: 'train' | 'inference', key: string) {
    const value = SAMPLE[key] ?? '4';
    const extra = key === 'interaction.config.env_shards' ? ['env_endpoint=http://h:8088'.replace(/^/, kind === 'train' ? 'interaction.config.' : '')] : [];
    const model = key === 'model_path' || key === 'tokenizer_path' ? [] : ['model.preset=tiny-char'];
    return buildJobSpec(kind, key === 'interaction.name' ? undefined : 'math', [...model, ...extra, `${key}=${value}`], {}, () => false);
  }

  for (const kind of ['train', 'inference'] as const) {
    it(`${kind}: every key is accepted with a meaning, accepted with a note saying why it has no effect, or refused naming what to use`, () => {
      for (const [key, target] of Object.entries(SEED_KEYS[kind])) {
        if ('refuse' in target) {
          const error = usageError(() => alone(kind, key));
          expect(error.message).toContain(`${key} is not supported here; ${target.refuse}`);
          expect(error.field).toBe(key);
          continue;
        }
        if (key === 'interaction.config.env_host' || key === 'interaction.config.env_port') {
          expect(usageError(() => alone(kind, key)).message).toContain('needs interaction.config.env_');
          continue;
        }
        const built = alone(kind, key);
        if ('ignore' in target) {
          expect(built.notes).toEqual([`${key} has no effect here: ${target.ignore}`]);
          continue;
        }
        expect(built.notes).toEqual([]);
        const base = buildJobSpec(kind, 'math', ['model.preset=tiny-char'], {}, () => false);
        const changed = JSON.stringify(built) !== JSON.stringify(base) || key === 'algorithm';
        expect({ key, changed }).toEqual({ key, changed: true });
        if ('path' in target) {
          let node: unknown = built.spec;
          for (const part of target.path) node = (node as Record<string, unknown>)[part];
          expect({ key, set: node !== undefined }).toEqual({ key, set: true });
        }
        if (key === 'wandb_key') {
          // The key is for the wandb logger: alone the server refuses it, saying so; beside logger_backends it streams.
          expect(() => parseJobSpec(built.spec)).toThrow(/add wandb to trainer.logger/);
          const withLogger = buildJobSpec(kind, 'math', ['model.preset=tiny-char', 'logger_backends=console,wandb', `${key}=${SAMPLE[key] ?? '4'}`], {}, () => false);
          expect(parseJobSpec(withLogger.spec).spec.trainer).toMatchObject({ logger: ['console', 'wandb'], wandb: { api_key: '4' } });
        } else if (!['data_path', 'val_data_path', 'output_path', 'scheduler_api_key', 'scheduler_url', 'server_url'].includes(key)) {
          expect(() => parseJobSpec(built.spec)).not.toThrow();
        }
      }
    });
  }

  it("runs the seed's README inference command as written: output_path, max_samples, env_endpoint", () => {
    const built = buildJobSpec('inference', 'math', [
      'model_path=job:4f0c',
      'data_path=data/math/test.parquet',
      'output_path=./tmp/results.jsonl',
      'max_samples=5',
      'env_endpoint=http://client-box:8088',
      'scheduler_url=http://server-box:8780',
    ]);
    expect(built).toEqual({
      spec: { kind: 'inference', environment: { id: 'math', url: 'http://client-box:8088', protocol: 'opentinker' }, model: { path: 'job:4f0c' }, num_tasks: 5 },
      url: 'http://server-box:8780',
      apiKey: undefined,
      configConnection: {},
      uploads: [{ key: 'val_dataset', path: 'data/math/test.parquet', token: 'data_path=data/math/test.parquet' }],
      outputPath: './tmp/results.jsonl',
      notes: [],
    });
    expect(() => parseJobSpec(built.spec)).not.toThrow();
  });

  it('maps env_host/env_port/env_shards to an OpenTinker game server, 0.0.0.0 kept for the transport to rewrite', () => {
    const { spec } = buildJobSpec('train', 'gomoku', [
      'tokenizer_path=/m',
      'interaction.config.env_host=0.0.0.0',
      'interaction.config.env_port=8091',
      'interaction.config.env_shards=4',
      'interaction.config.board_size=9',
    ]);
    expect(spec.environment).toEqual({ id: 'gomoku', url: 'http://0.0.0.0:8091', protocol: 'opentinker', shards: 4, config: { board_size: 9 } });
    expect(() => parseJobSpec(spec)).not.toThrow();
    expect(usageError(() => buildJobSpec('train', 'gomoku', ['tokenizer_path=/m', 'interaction.config.env_shards=4'])).message).toContain('needs the game server too');
    expect(usageError(() => buildJobSpec('inference', 'gomoku', ['model_path=/m', 'env_endpoint=http://a:1', 'env_endpoint=http://b:1'])).message).toContain('contradicts');
  });

  it('resolves a model folder where the command runs, and makes a bare Org/Name that is no folder here a Hub repo', () => {
    const dir = mkdtempSync(join(tmpdir(), 'seedkeys-'));
    const cwd = process.cwd();
    try {
      mkdirSync(join(dir, 'Qwen', 'Qwen2.5-1.5B'), { recursive: true });
      process.chdir(dir);
      expect(buildJobSpec('train', 'math', ['tokenizer_path=Qwen/Qwen2.5-1.5B']).spec.model).toEqual({ path: join(dir, 'Qwen', 'Qwen2.5-1.5B') });
      expect(buildJobSpec('train', 'math', ['tokenizer_path=Qwen/Qwen2.5-3B-Instruct']).spec.model).toEqual({ path: 'hf:Qwen/Qwen2.5-3B-Instruct' });
      expect(buildJobSpec('train', 'math', ['model_path=job:4f0c']).spec.model).toEqual({ path: 'job:4f0c' });
    } finally {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
    }
    // model_path wins: a model carries its own tokenizer here.
    const both = buildJobSpec('inference', 'math', ['model_path=job:4f0c', 'tokenizer_path=/models/qwen']);
    expect(both.spec.model).toEqual({ path: 'job:4f0c' });
    expect(both.notes).toEqual(["tokenizer_path has no effect here: the model's own tokenizer is used (model_path=job:4f0c)"]);
  });

  it("translates the seed's values: agent_loop, LoRA rank 0 and all-linear, max_new_tokens as the response budget", () => {
    const { spec } = buildJobSpec('train', 'math', [
      'model_path=/m',
      'algorithm=agent_loop',
      'lora.lora_rank=64',
      'lora.lora_alpha=32',
      'lora.target_modules=all-linear',
      'max_new_tokens=4098',
      'num_steps=1000',
    ]);
    expect(spec).toMatchObject({
      model: { path: '/m', lora: { rank: 64, alpha: 32, target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] } },
      rollout: { max_response_tokens: 4098, max_new_tokens: 4098 },
      total_steps: 1000,
    });
    expect(spec.algorithm).toBeUndefined();
    expect(() => parseJobSpec(spec)).not.toThrow();
    expect(buildJobSpec('train', 'math', ['model_path=/m', 'lora.lora_rank=0']).spec.model).toEqual({ path: '/m' });
    expect(buildJobSpec('train', 'math', ['model_path=/m', 'max_new_tokens=8192', 'multi_turn.max_tokens_per_turn=256']).spec.rollout).toEqual({
      max_new_tokens: 256,
      max_response_tokens: 8192,
    });
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=/m', 'algorithm=ppo'])).message).toContain('adv_estimator picks the RL algorithm');
  });

  it("reads one of the seed's client configs as --config, nulls and ${…} left out, the command line winning", () => {
    const config = {
      project_name: 'opentinker',
      experiment_name: 'gomoku_training',
      logger_backends: ['console', 'wandb'],
      tokenizer_path: null,
      batch_size: 4,
      num_epochs: null,
      num_steps: 1000,
      val_batch_size: 50,
      temperature: 1,
      algorithm: 'agent_loop',
      adv_estimator: 'grpo_per_step',
      rollout_n: 16,
      interaction: {
        name: 'gomoku',
        class_path: 'opentinker.environment.gym_environment_interaction.GymEnvironmentInteraction',
        config: { env_host: '0.0.0.0', env_port: 8088, env_endpoint: 'http://${interaction.config.env_host}:${interaction.config.env_port}', max_steps: 81, board_size: 9 },
      },
      multi_turn: { max_user_turns: '${interaction.config.max_total_steps}', max_assistant_turns: 39, max_tokens_per_turn: 256 },
      scheduler_url: 'http://0.0.0.0:8780',
      num_gpus: 2,
    };
    const built = buildJobSpec('train', undefined, ['tokenizer_path=/models/qwen', 'batch_size=8', 'interaction.config.env_port=9000', 'scheduler_url=http://gpu:8780'], config);
    expect(built.spec).toEqual({
      kind: 'train',
      name: 'gomoku_training',
      batch_size: 8,
      total_steps: 1000,
      val_batch_size: 50,
      rollout: { temperature: 1, max_turns: 39, max_new_tokens: 256 },
      algorithm: { adv_estimator: 'grpo_per_step', rollout_n: 16 },
      environment: { id: 'gomoku', config: { board_size: 9 }, url: 'http://0.0.0.0:9000', protocol: 'opentinker' },
      resources: { gpus: 2 },
      model: { path: '/models/qwen' },
      trainer: { project_name: 'opentinker', logger: ['console', 'wandb'] },
    });
    expect(built.url).toBe('http://gpu:8780');
    expect(built.configConnection).toEqual({});
    // The config's own server and key are kept apart: they count only where nothing else names one.
    const alone = buildJobSpec('train', undefined, ['tokenizer_path=/m'], { ...config, scheduler_api_key: 'otk_example' });
    expect(alone).toMatchObject({ url: undefined, apiKey: undefined, configConnection: { url: 'http://0.0.0.0:8780', apiKey: 'otk_example' } });
    expect(built.notes.map((n) => n.split(' ')[0])).toEqual(['interaction.class_path', 'interaction.config.max_steps']);
    expect(() => parseJobSpec(built.spec)).not.toThrow();
  });

  it("makes a data row a task as OpenTinker's StaticDatasetGenerator does: the prompt, and the env kwargs its clients send /reset", () => {
    const prompt = [{ role: 'user', content: '1+1?' }];
    const extra = { index: 0, interaction_kwargs: { name: 'math', query: '1+1?', ground_truth: '2' } };
    const math = { data_source: 'DigitalLearningGmbH/MATH-lighteval', prompt, reward_model: { ground_truth: '2' }, extra_info: extra };
    expect(seedTaskKwargs(math, 'row 1', 't', 'math')).toEqual({ prompt, ground_truth: '2', extra_info: extra, data_source: 'DigitalLearningGmbH/MATH-lighteval' });
    // Ground truth: the row's, else reward_model's, else extra_info's; data_source: the row's, else the interaction's name.
    expect(seedTaskKwargs({ prompt: 'x', ground_truth: '2', reward_model: { ground_truth: '3' } }, 'row 1', 't', 'math')).toEqual({
      prompt: 'x',
      ground_truth: '2',
      data_source: 'math',
    });
    expect(seedTaskKwargs({ prompt, extra_info: { ground_truth: '5' } }, 'row 1', 't', 'geo3k')).toEqual({
      prompt,
      ground_truth: '5',
      extra_info: { ground_truth: '5' },
      data_source: 'geo3k',
    });
    // Interaction kwargs are not env kwargs: StaticDatasetGenerator never reads them.
    expect(seedTaskKwargs({ interaction_kwargs: { name: 'g', env_kwargs: { board_size: 9 } } }, 'row 1', 't', 'gomoku')).toEqual({ data_source: 'gomoku' });
    expect(usageError(() => seedTaskKwargs([1], 'd.jsonl row 3', 'data_path=d.jsonl', 'math')).message).toContain('d.jsonl row 3 is not a JSON object');
  });
});

describe("the seed's model_path=Org/Name", () => {
  it('reaches the job spec through tokenizer_path and model_path, not through model.path', () => {
    expect(buildJobSpec('train', 'math', ['tokenizer_path=Qwen/Qwen2.5-1.5B']).spec.model).toMatchObject({ path: 'hf:Qwen/Qwen2.5-1.5B' });
    expect(buildJobSpec('inference', 'math', ['model_path=Org/Name']).spec.model).toMatchObject({ path: 'hf:Org/Name' });
    expect(buildJobSpec('inference', 'math', ['model.path=/models/Org']).spec.model).toMatchObject({ path: '/models/Org' });
  });
});
