#!/usr/bin/env node
'use strict';
/**
 * "No import cycles between folders of src/" (docs/architecture.md, "Dependency rules"), checked on
 * dependency-cruiser's JSON output at two levels:
 *
 *   npx depcruise src --config .dependency-cruiser.cjs --output-type json | node test/lint/folder-cycles.cjs
 *
 * - `folder`: a folder is the directory a file sits in (`src/kinds` and `src/kinds/train` are two).
 * - `top`: a folder is the top-level folder of src/ a file sits in, sub-folders included
 *   (`src/kinds/train` is `src/kinds`); files directly in src/ (the entry points) are the folder `src`.
 *   No cycle here means the top-level folders stack in floors, each importing only from those below.
 *
 * Every import between two folders of src/ is an edge: specs, type-only imports (a type names a
 * dependency as much as a value does) and lazy `import()`s included. dependency-cruiser's own
 * `scope: 'folder'` merges sub-folders into their parents and drops dependency types, so it cannot say
 * this; the check is the strongly connected components of that graph, each printed with the imports
 * that close it. Exit code 1 when there is one.
 */

/** The levels the check runs at (see above). */
const LEVELS = ['folder', 'top'];

/**
 * The folder a file counts in: at `folder` level its directory (`src/a/b/c.ts` → `src/a/b`), at `top`
 * level its top-level folder (`src/a`); files directly in src/ are the folder `src` at both.
 */
function folderOf(path, level = 'folder') {
  const dir = path.slice(0, path.lastIndexOf('/'));
  return level === 'top' ? dir.split('/').slice(0, 2).join('/') : dir;
}

/**
 * The folder cycles of src/ at a level: each strongly connected component of two or more folders, with
 * the imports (`from => to`) of each edge inside it.
 * @param {{ source: string, dependencies: { resolved: string, dependencyTypes: string[] }[] }[]} modules
 * @param {'folder' | 'top'} [level]
 */
function folderCycles(modules, level = 'folder') {
  const edges = new Map();
  for (const m of modules) {
    if (!m.source.startsWith('src/')) continue;
    for (const d of m.dependencies) {
      if (!d.resolved.startsWith('src/')) continue;
      const from = folderOf(m.source, level);
      const to = folderOf(d.resolved, level);
      if (from === to) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      const imports = edges.get(from);
      if (!imports.has(to)) imports.set(to, []);
      imports.get(to).push(`${m.source} => ${d.resolved}`);
    }
  }
  // Tarjan's algorithm.
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) components.push(component.sort());
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((folders) => {
    const inside = new Set(folders);
    const links = [];
    for (const from of folders) for (const [to, imports] of edges.get(from) ?? []) if (inside.has(to)) links.push({ from, to, imports });
    return { folders, links };
  });
}

module.exports = { folderCycles, LEVELS };

if (require.main === module) {
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => (input += chunk));
  process.stdin.on('end', () => {
    const modules = JSON.parse(input).modules;
    let found = 0;
    for (const level of LEVELS) {
      const cycles = folderCycles(modules, level);
      found += cycles.length;
      for (const { folders, links } of cycles) {
        process.stdout.write(`error no-folder-cycles (${level} level): ${folders.join(', ')} import each other:\n`);
        for (const { from, to, imports } of links)
          process.stdout.write(`  ${from} -> ${to}: ${imports.slice(0, 3).join('; ')}${imports.length > 3 ? `; … (${imports.length})` : ''}\n`);
      }
    }
    if (found) {
      process.stdout.write('Folders of src/ form a directed graph: a cycle between folders means one of them holds code the other should own.\n');
      process.exitCode = 1;
    } else {
      process.stdout.write(`✔ no import cycles between folders of src/ (levels: ${LEVELS.join(', ')})\n`);
    }
  });
}
