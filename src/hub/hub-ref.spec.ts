import { parseHubRef, seedModelPath } from './hub-ref';
import { globToRegExp, splitFiles } from './hub-datasets';

describe('parseHubRef', () => {
  it('reads hf:Org/Name[@revision] and refuses names that could leave the cache folder', () => {
    expect(parseHubRef('hf:Qwen/Qwen2.5-0.5B-Instruct')).toEqual({ type: 'model', repo: 'Qwen/Qwen2.5-0.5B-Instruct', revision: null });
    expect(parseHubRef('hf:gpt2@refs/pr/1')).toEqual({ type: 'model', repo: 'gpt2', revision: 'refs/pr/1' });
    expect(parseHubRef('hf:datasets/openai/gsm8k')).toEqual({ type: 'dataset', repo: 'openai/gsm8k', revision: null });
    for (const bad of ['hf:', 'hf:a/b/c', 'hf:../etc', 'hf:a/..', 'hf:a--b/c', 'hf:a/b@', 'hf:a/b@../x', 'hf:a/b@x/../y', 'hf:a b/c', 'hf:a/b.git']) {
      expect(() => parseHubRef(bad)).toThrow(expect.objectContaining({ code: 'OT_ERR_VALIDATION', field: 'model.path' }));
    }
  });
});

describe("the seed's model_path=Org/Name", () => {
  it('names a Hub repo unless a folder of that name is here', () => {
    expect(seedModelPath('Qwen/Qwen2.5-1.5B', () => false)).toBe('hf:Qwen/Qwen2.5-1.5B');
    expect(seedModelPath('Qwen/Qwen2.5-1.5B@main', () => false)).toBe('hf:Qwen/Qwen2.5-1.5B@main');
    expect(seedModelPath('Qwen/Qwen2.5-1.5B', () => true)).toBe('Qwen/Qwen2.5-1.5B');
    for (const other of ['/models/qwen', 'job:4f0c', 'hf:a/b', './a/b', 'a/b/c', 'a--b/c', 16]) expect(seedModelPath(other, () => false)).toBe(other);
  });
});

describe("a dataset card's data files", () => {
  it('follows the configs front matter, else the Hub conventions', () => {
    expect(globToRegExp('data/train-*').test('data/train-00000-of-00001.parquet')).toBe(true);
    expect(globToRegExp('data/train-*').test('data/x/train-0.parquet')).toBe(false);
    expect(globToRegExp('main/**').test('main/a/b.parquet')).toBe(true);
    const paths = ['README.md', 'main/train-0.parquet', 'main/test-0.parquet', 'socratic/train-0.parquet', 'data/train-0.parquet', 'data/test-0.parquet'];
    const card = '---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train-*\n  - split: test\n    path: [main/test-*]\n---\n';
    expect(splitFiles(card, 'main', paths)).toEqual({ train: ['main/train-0.parquet'], test: ['main/test-0.parquet'] });
    expect(splitFiles(null, 'default', paths)).toEqual({ train: ['data/train-0.parquet'], test: ['data/test-0.parquet'] });
    expect(splitFiles('# no front matter', 'socratic', paths)).toEqual({ train: ['socratic/train-0.parquet'], test: [] });
  });
});
