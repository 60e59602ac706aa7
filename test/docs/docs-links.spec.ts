import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anchorsOf, brokenLinks, formatProblems, headingSlug, linksOf, OUTSIDE_DOCUMENTS, outsideMentions, repositoryFiles } from './docs-links';

// Jest runs from the repository root.
const ROOT = process.cwd();

describe('the repository docs', () => {
  const files = repositoryFiles(ROOT);
  const markdown = files.filter((f) => f.endsWith('.md'));
  // The front door and the reference pages must exist; the link check below covers every Markdown file.
  const required = ['README.md', 'docs/api.md', 'docs/architecture.md', 'docs/configuration.md', 'docs/design.md', 'docs/environments.md', 'docs/serving.md', 'docs/training.md'];

  it('has the README and the reference pages', () => {
    expect(required.filter((f) => !markdown.includes(f))).toEqual([]);
  });

  it('has no relative link to a missing file or heading', () => {
    const problems = markdown.flatMap((f) => brokenLinks(ROOT, f));
    expect(formatProblems(problems)).toBe('');
  });

  it('cites no document outside the repository', () => {
    const problems = outsideMentions(
      ROOT,
      files.filter((f) => f.endsWith('.md') || f.endsWith('.ts')),
    );
    expect(formatProblems(problems)).toBe('');
  });
});

describe('the link checker', () => {
  let root: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'docs-links-'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(
      join(root, 'docs', 'guide.md'),
      [
        '# Guide',
        '## Jobs (`kind: "train"`)',
        '## Jobs (`kind: "train"`)',
        '```md',
        '## Not a heading',
        '[in a fence](missing-in-fence.md)',
        '```',
        'See [the readme](../README.md), [the top](#guide), [jobs](#jobs-kind-train-1) and `[code](nowhere.md)`.',
        'Broken: [gone](gone.md), [no heading](../README.md#nothing), [outside](../../elsewhere.md), [web](https://example.com/x.md).',
      ].join('\n'),
    );
    writeFileSync(join(root, 'README.md'), '# Read me\n\n[guide](docs/guide.md#guide) ![picture](docs/missing.png)\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("makes GitHub's heading anchors", () => {
    expect(headingSlug('Training sessions (`kind: "session"`: you own the loop)')).toBe('training-sessions-kind-session-you-own-the-loop');
    expect(headingSlug('3. Dataset rows (OpenTinker / verl layout, loaded as they are)')).toBe('3-dataset-rows-opentinker--verl-layout-loaded-as-they-are');
    expect(headingSlug('[HTTP](x.md) API')).toBe('http-api');
  });

  it('numbers repeated headings and ignores fenced code', () => {
    const anchors = anchorsOf('# A\n## B\n## B\n```\n## C\n```\n');
    expect([...anchors]).toEqual(['a', 'b', 'b-1']);
  });

  it('reads links outside code only', () => {
    const targets = linksOf('[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n![d](p.png "title")').map((l) => l.target);
    expect(targets).toEqual(['x.md', 'p.png']);
  });

  it('reports missing files, missing headings and links leaving the repository', () => {
    const problems = brokenLinks(root, 'docs/guide.md').map((p) => `${p.link}: ${p.reason}`);
    expect(problems).toEqual(['gone.md: no such file', '../README.md#nothing: no heading #nothing in README.md', '../../elsewhere.md: points outside the repository']);
    expect(brokenLinks(root, 'README.md').map((p) => p.link)).toEqual(['docs/missing.png']);
  });

  it('finds mentions of documents outside the repository', () => {
    writeFileSync(join(root, 'notes.ts'), `// see ${OUTSIDE_DOCUMENTS[0]}\nexport {};\n`);
    expect(outsideMentions(root, ['notes.ts', 'README.md']).map((p) => `${p.file}:${p.line}`)).toEqual(['notes.ts:1']);
  });
});
