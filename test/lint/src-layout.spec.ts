import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

// Jest runs from the repository root.
const ROOT = process.cwd();
const SRC = join(ROOT, 'src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

const topFolders = readdirSync(SRC, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

describe('the layout of src/', () => {
  it('opens every Nest module with one line saying what its folder owns, the same line for modules of one folder', () => {
    const modules = filesUnder(SRC).filter((f) => f.endsWith('.module.ts'));
    const byFolder = new Map<string, Set<string>>();
    const wrong: string[] = [];
    for (const file of modules) {
      const folder = relative(ROOT, join(file, '..'));
      const first = readFileSync(file, 'utf8').split('\n', 1)[0];
      if (!first.startsWith(`// ${folder} owns `) || !first.endsWith('.')) wrong.push(`${relative(ROOT, file)}: ${first}`);
      byFolder.set(folder, (byFolder.get(folder) ?? new Set()).add(first));
    }
    expect(wrong).toEqual([]);
    expect([...byFolder].filter(([, lines]) => lines.size > 1).map(([folder]) => folder)).toEqual([]);
  });

  it("names each top-level folder once in docs/architecture.md's table of floors", () => {
    const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const table = doc.slice(doc.indexOf('| floor | folders |'));
    const rows = table
      .slice(0, table.search(/\n\s*\n/))
      .split('\n')
      .slice(2);
    const named = rows.flatMap((row) => [...row.split('|')[2].matchAll(/`([a-z-]+)`/g)].map((m) => m[1]));
    expect([...named].sort()).toEqual(topFolders);
  });
});
