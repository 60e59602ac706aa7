import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { AppError, ErrorCode } from '../core/app-error';
import type { HubCache } from './hub-cache';
import type { HubRef } from './hub-ref';

/**
 * The datasets `opentinker data prepare gsm8k|math` fetches from the Hub: the repos and configs verl's
 * preprocessing scripts load (`examples/data_preprocess/gsm8k.py`: `openai/gsm8k`, config `main`;
 * `math_dataset.py`: `DigitalLearningGmbH/MATH-lighteval`, its default config), in the row format the
 * math environment's converter reads.
 */
export interface HubDatasetRecipe {
  repo: string;
  config: string;
  /** The converter's input format. */
  format: 'gsm8k' | 'math';
}

export const HUB_DATASETS: Readonly<Record<'gsm8k' | 'math', HubDatasetRecipe>> = {
  gsm8k: { repo: 'openai/gsm8k', config: 'main', format: 'gsm8k' },
  math: { repo: 'DigitalLearningGmbH/MATH-lighteval', config: 'default', format: 'math' },
};

export const SPLITS = ['train', 'test'] as const;
export type Split = (typeof SPLITS)[number];

/** A `data_files` glob of a dataset card (`data/train-*`, `main/**`) as a regular expression. */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      out += '.*';
      i++;
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

/**
 * Which files hold each split of `config`, from the dataset card's `configs:` front matter (the Hub's
 * documented way to declare them), else the Hub's conventional shards: `data/<split>-*.parquet` for the
 * default config, `<config>/<split>-*.parquet` for a named one.
 */
export function splitFiles(readme: string | null, config: string, paths: readonly string[]): Record<Split, string[]> {
  const out: Record<Split, string[]> = { train: [], test: [] };
  const declared = readme === null ? null : declaredDataFiles(readme, config);
  for (const split of SPLITS) {
    const globs = declared?.[split] ?? [config === 'default' ? `data/${split}-*.parquet` : `${config}/${split}-*.parquet`];
    const patterns = globs.map(globToRegExp);
    out[split] = paths.filter((p) => patterns.some((r) => r.test(p))).sort();
  }
  return out;
}

function declaredDataFiles(readme: string, config: string): Partial<Record<Split, string[]>> | null {
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(readme);
  if (!m) return null;
  let card: unknown;
  try {
    card = parseYaml(m[1]);
  } catch {
    return null;
  }
  const configs = (card as { configs?: unknown })?.configs;
  if (!Array.isArray(configs)) return null;
  const entry = configs.find((c) => (c as { config_name?: unknown })?.config_name === config) as { data_files?: unknown } | undefined;
  if (!entry || !Array.isArray(entry.data_files)) return null;
  const out: Partial<Record<Split, string[]>> = {};
  for (const f of entry.data_files as Array<{ split?: unknown; path?: unknown }>) {
    if (f?.split !== 'train' && f?.split !== 'test') continue;
    const paths = Array.isArray(f.path) ? f.path : [f.path];
    out[f.split] = paths.filter((p): p is string => typeof p === 'string');
  }
  return out;
}

/** Fetches a recipe's train and test files into the cache; returns their local paths by split. */
export async function fetchHubDataset(
  cache: HubCache,
  recipe: HubDatasetRecipe,
  revision: string | null,
  log: (line: string) => void,
): Promise<{ commit: string; files: Record<Split, string[]> }> {
  const ref: HubRef = { type: 'dataset', repo: recipe.repo, revision };
  const field = 'dataset';
  const card = await cache.resolve(ref, { field, log, select: (p) => p === 'README.md' });
  const readme = card.files.length > 0 ? await readFile(join(card.dir, 'README.md'), 'utf8') : null;
  const listing = await cache.listing(ref, card.commit);
  const wanted = splitFiles(
    readme,
    recipe.config,
    listing.map((f) => f.path),
  );
  if (wanted.train.length === 0 && wanted.test.length === 0) {
    throw new AppError(ErrorCode.NOT_FOUND, `hf:datasets/${recipe.repo} at ${card.commit.slice(0, 12)} has no train or test files for config ${recipe.config}`, { field });
  }
  const all = new Set([...wanted.train, ...wanted.test]);
  const snap = await cache.resolve({ ...ref, revision: card.commit }, { field, log, select: (p) => all.has(p) });
  const local = (paths: string[]) => paths.map((p) => join(snap.dir, p));
  return { commit: snap.commit, files: { train: local(wanted.train), test: local(wanted.test) } };
}
