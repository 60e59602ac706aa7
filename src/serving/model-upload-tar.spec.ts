import { modelTarEntryName } from './model-upload-tar';

describe('the entries an uploaded model tar may hold', () => {
  const names = (...entries: Array<{ name: string; type?: 'file' | 'directory' | 'symlink' | 'link' }>) => {
    const state: { root: string | null | undefined } = { root: undefined };
    return entries.map((e) => modelTarEntryName({ name: e.name, type: e.type ?? 'file' }, state));
  };
  const refusal = (...entries: Array<{ name: string; type?: 'file' | 'directory' | 'symlink' | 'link' }>) => {
    try {
      names(...entries);
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('takes a model folder’s files at the top or under one folder', () => {
    expect(names({ name: 'config.json' }, { name: 'model-00001-of-00002.safetensors' }, { name: 'tokenizer.json' })).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'tokenizer.json',
    ]);
    expect(names({ name: 'qwen/', type: 'directory' }, { name: 'qwen/config.json' }, { name: './qwen/chat_template.jinja' })).toEqual([null, 'config.json', 'chat_template.jinja']);
    expect(names({ name: './', type: 'directory' }, { name: './generation_config.json' }, { name: 'model.safetensors.index.json' })).toEqual([
      null,
      'generation_config.json',
      'model.safetensors.index.json',
    ]);
  });

  it('refuses links, paths that leave the folder, subfolders and other files', () => {
    expect(refusal({ name: 'config.json', type: 'symlink' })).toMatch(/is a symlink/);
    expect(refusal({ name: 'config.json', type: 'link' })).toMatch(/is a link/);
    expect(refusal({ name: '../config.json' })).toMatch(/leaves the folder/);
    expect(refusal({ name: 'a/../../config.json' })).toMatch(/leaves the folder/);
    expect(refusal({ name: '/config.json' })).toMatch(/absolute path/);
    expect(refusal({ name: 'a\\config.json' })).toMatch(/character/);
    expect(refusal({ name: 'a/b/config.json' })).toMatch(/not a file at the model folder's top/);
    expect(refusal({ name: 'a/b/', type: 'directory' })).toMatch(/folder inside the model folder/);
    expect(refusal({ name: 'run.py' })).toMatch(/"run.py" is not a file a model folder needs/);
    expect(refusal({ name: 'config.json' }, { name: 'a/model.safetensors' })).toMatch(/outside the top of the tar/);
    expect(refusal({ name: 'a/config.json' }, { name: 'b/model.safetensors' })).toMatch(/outside the folder a\//);
  });
});
