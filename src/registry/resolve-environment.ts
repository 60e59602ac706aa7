import type { Environment } from '@opentinker/env-sdk';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { hostSdkVersion, loadRegistry } from './registry-loader';
import { resolveEntry } from './plugin-discovery';
import { loadPlugin } from './plugin-loader';
import { pathToFileURL } from 'node:url';

/**
 * An environment for `opentinker env serve`: a path to a package folder (loaded and checked like a
 * plugin), or an id among this installation's environments.
 */
export async function resolveEnvironment(target: string, hostRoot: string): Promise<Environment<unknown, unknown>> {
  const dir = resolve(target);
  if (existsSync(join(dir, 'package.json'))) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const record = await loadPlugin({ dir, source: 'plugins-dir', firstParty: false, manifest }, hostSdkVersion(hostRoot));
    if (!record.environment) throw new Error(`${dir}: ${record.error}`);
    return record.environment;
  }
  const records = await loadRegistry({ hostRoot, pluginsDir: join(hostRoot, 'plugins') });
  const found = records.find((r) => r.id === target && r.environment);
  if (!found?.environment) {
    const known = records.filter((r) => r.environment).map((r) => r.id);
    throw new Error(`Unknown environment ${target} (known: ${known.join(', ') || 'none'}; or give the path of a package folder)`);
  }
  return found.environment;
}

/**
 * A named export of an environment package (e.g. math's `prepareDataset` for `opentinker data
 * prepare`), found through the registry so the server never imports environment packages directly.
 */
export async function loadEnvironmentExport<T>(id: string, name: string, hostRoot: string): Promise<T> {
  const records = await loadRegistry({ hostRoot, pluginsDir: join(hostRoot, 'plugins') });
  const record = records.find((r) => r.id === id && r.status === 'loaded');
  if (!record)
    throw new Error(
      `Unknown environment ${id} (known: ${
        records
          .filter((r) => r.status === 'loaded')
          .map((r) => r.id)
          .join(', ') || 'none'
      })`,
    );
  const manifest = JSON.parse(readFileSync(join(record.dir, 'package.json'), 'utf8'));
  const mod = (await import(pathToFileURL(resolveEntry(record.dir, manifest)).href)) as Record<string, unknown>;
  const value = mod[name] ?? (mod.default as Record<string, unknown> | undefined)?.[name];
  if (typeof value !== 'function') throw new Error(`Environment ${id} (${record.packageName}) has no ${name}() export`);
  return value as T;
}
