import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Checks for the repository's Markdown: relative links (and `#fragment`s into Markdown files) must
 * resolve inside the repository, and no file may cite documents that live outside it.
 */

export interface LinkProblem {
  file: string;
  line: number;
  link: string;
  reason: string;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The lines of a Markdown text outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let fence: string | null = null;
  text.split('\n').forEach((line, i) => {
    const open = /^\s*(```+|~~~+)/.exec(line);
    if (open) {
      if (fence === null) fence = open[1][0];
      else if (open[1][0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push([i + 1, line]);
  });
  return out;
}

/** Every anchor a Markdown text defines through its headings (duplicates get `-1`, `-2`, …). */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, line] of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = headingSlug(heading[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The link targets of a Markdown text (inline links and images), outside code. */
export function linksOf(text: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  for (const [number, line] of proseLines(text)) {
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: number, target: m[1] });
  }
  return links;
}

/** Relative links of `file` (repository-relative) that do not resolve inside `root`. */
export function brokenLinks(root: string, file: string): LinkProblem[] {
  const text = readFileSync(join(root, file), 'utf8');
  const problems: LinkProblem[] = [];
  for (const { line, target } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [rawPath, fragment] = target.split('#', 2) as [string, string | undefined];
    const path = decodeURIComponent(rawPath);
    const resolved = path === '' ? join(root, file) : resolve(root, dirname(file), path);
    const inside = relative(root, resolved);
    if (inside.startsWith('..') || inside.split(sep)[0] === '..') {
      problems.push({ file, line, link: target, reason: 'points outside the repository' });
      continue;
    }
    if (!existsSync(resolved)) {
      problems.push({ file, line, link: target, reason: 'no such file' });
      continue;
    }
    if (fragment && resolved.endsWith('.md') && statSync(resolved).isFile()) {
      if (!anchorsOf(readFileSync(resolved, 'utf8')).has(fragment.toLowerCase())) {
        problems.push({ file, line, link: target, reason: `no heading #${fragment} in ${relative(root, resolved)}` });
      }
    }
  }
  return problems;
}

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'coverage']);

/** The repository's files (tracked and untracked-but-not-ignored), from git, else from a walk of the tree. */
export function repositoryFiles(root: string): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out
      .split('\0')
      .filter((f) => f !== '' && existsSync(join(root, f)))
      .sort();
  } catch {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
        if (entry.isDirectory()) {
          if (!SKIP_DIRS.has(entry.name)) walk(join(dir, entry.name));
        } else files.push(join(dir, entry.name));
      }
    };
    walk('');
    return files.sort();
  }
}

/**
 * Names of documents that live outside the repository and were cited as if they were in it (built
 * from parts so that this file does not match itself).
 */
export const OUTSIDE_DOCUMENTS = ['DESIGN' + '.md', '..' + '/shared'];

/** Lines of `files` that mention a document outside the repository. */
export function outsideMentions(root: string, files: string[]): LinkProblem[] {
  const problems: LinkProblem[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    if (!OUTSIDE_DOCUMENTS.some((name) => text.includes(name))) continue;
    text.split('\n').forEach((line, i) => {
      for (const name of OUTSIDE_DOCUMENTS) if (line.includes(name)) problems.push({ file, line: i + 1, link: name, reason: 'cites a file outside the repository' });
    });
  }
  return problems;
}

export function formatProblems(problems: LinkProblem[]): string {
  return problems.map((p) => `${p.file}:${p.line}: ${p.link} (${p.reason})`).join('\n');
}
