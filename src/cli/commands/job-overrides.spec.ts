import { parseJobSpec } from '../../jobs/kinds/job-kinds';
import { CliError } from './cli-error';
import { buildJobSpec, parseValue } from './job-overrides';

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
      environment: { id: 'math', url: 'http://env-box:8088' },
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
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'tokenizer_path=b'])).message).toBe('"tokenizer_path=b" contradicts "model_path=a" (both set model.path)');
    expect(buildJobSpec('train', 'math', ['model_path=a', 'tokenizer_path=a']).spec.model).toEqual({ path: 'a' });
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'model.preset=tiny-char'])).message).toContain('a job has one model');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'interaction.config.env_host=h'])).message).toContain('needs interaction.config.env_port');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'interaction.config.env_host=h', 'interaction.config.env_port=http'])).message).toContain('port');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a'], { kind: 'sleep' })).message).toContain('--config holds a "sleep" job');
    expect(usageError(() => buildJobSpec('train', 'math', ['model_path=a', 'environment.config=3', 'environment.config.difficulty=2'])).message).toContain('inside config');
  });
});
