import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelPathAllowed, openableModelDir } from './model-roots';

const base = mkdtempSync(join(tmpdir(), 'ot-roots-'));
const root = join(base, 'models');
const outside = join(base, 'home', 'jobs', 'a', 'work', 'checkpoints', 'step-4', 'model');
mkdirSync(join(root, 'qwen'), { recursive: true });
mkdirSync(outside, { recursive: true });
symlinkSync(outside, join(root, 'sneaky'));

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('model roots', () => {
  it('allows folders inside a root as written, nothing else', () => {
    expect(modelPathAllowed(join(root, 'qwen'), [root])).toBe(true);
    expect(modelPathAllowed(root, [root])).toBe(true);
    expect(modelPathAllowed(outside, [root])).toBe(false);
    expect(modelPathAllowed(`${root}/../home`, [root])).toBe(false);
    expect(modelPathAllowed('models/qwen', [root])).toBe(false);
    expect(modelPathAllowed(`${root}-evil/x`, [root])).toBe(false);
    expect(modelPathAllowed(join(root, 'qwen'), [])).toBe(false);
  });

  it('follows links before allowing, and refuses missing and outside folders with the same message', async () => {
    expect(await openableModelDir(join(root, 'qwen'), [root])).toContain('qwen');
    const link = openableModelDir(join(root, 'sneaky'), [root]).catch((e: Error) => e.message);
    const missing = openableModelDir(join(root, 'nope'), [root]).catch((e: Error) => e.message);
    const out = openableModelDir(outside, [root]).catch((e: Error) => e.message);
    const [a, b, c] = await Promise.all([link, missing, out]);
    for (const m of [a, b, c]) expect(m).toMatch(/is not a model folder you may use/);
    expect(b.replace(/"[^"]*"/, '')).toBe(c.replace(/"[^"]*"/, ''));
  });
});
