import { join } from 'node:path';
import { modelContentHash, parseUserModelRef, userModelDir } from './user-model-files';

describe('uploaded model names and folders', () => {
  const ID = '0b7e2c4a-5d1f-4e8a-9c3b-6f2d1a0e9b87';

  it('reads model:<id> and only an id the API mints reaches the file system', () => {
    expect(parseUserModelRef(`model:${ID}`)).toBe(ID);
    expect(parseUserModelRef(`model:${ID.toUpperCase()}`)).toBe(ID);
    for (const bad of ['model:', 'model:../x', `model:${ID}/..`, 'model:abc']) expect(parseUserModelRef(bad)).toBeNull();
    expect(parseUserModelRef(ID)).toBeNull();
    expect(userModelDir('/home', ID)).toBe(join('/home', 'models', ID));
    expect(() => userModelDir('/home', '../jobs')).toThrow(/invalid model id/);
  });

  it('hashes a folder’s content whatever the order its files are listed in', () => {
    const a = { path: 'config.json', size: 2, sha256: 'a'.repeat(64) };
    const b = { path: 'model.safetensors', size: 9, sha256: 'b'.repeat(64) };
    expect(modelContentHash([a, b])).toBe(modelContentHash([b, a]));
    expect(modelContentHash([a, b])).not.toBe(modelContentHash([a, { ...b, size: 10 }]));
    expect(modelContentHash([a, b])).toMatch(/^[0-9a-f]{64}$/);
  });
});
