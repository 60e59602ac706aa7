import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where a candidate package was found. */
export type PluginSource = 'dependency' | 'plugins-dir';

export interface PluginCandidate {
  /** Folder holding the package.json. */
  dir: string;
  source: PluginSource;
  /** Our own packages (`@opentinker/*`): their failure stops the boot. */
  firstParty: boolean;
  manifest: PackageManifest | null;
  /** Why the manifest could not be read, when it could not. */
  manifestError?: string;
}

export interface PackageManifest {
  name?: string;
  version?: string;
  main?: string;
  exports?: unknown;
  type?: string;
  opentinker?: { kind?: unknown; id?: unknown };
  peerDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
}

const FIRST_PARTY_SCOPE = '@opentinker/';

/**
 * Finds environment packages: the host's declared dependencies whose package.json carries
 * `"opentinker": { "kind": "environment" }`, plus every sub-folder of the plugins folder that has a
 * package.json (marker or not: a folder there without one is reported, not ignored). Never crawls
 * node_modules.
 */
export function discoverPlugins(hostRoot: string, pluginsDir: string): PluginCandidate[] {
  const found: PluginCandidate[] = [];
  const host = readManifest(join(hostRoot, 'package.json')).manifest ?? {};
  for (const name of Object.keys(host.dependencies ?? {}).sort()) {
    const dir = findPackageDir(hostRoot, name);
    if (!dir) continue;
    const { manifest } = readManifest(join(dir, 'package.json'));
    if (manifest?.opentinker?.kind !== 'environment') continue;
    found.push({ dir, source: 'dependency', firstParty: name.startsWith(FIRST_PARTY_SCOPE), manifest });
  }
  if (existsSync(pluginsDir)) {
    for (const entry of readdirSync(pluginsDir).sort()) {
      const dir = join(pluginsDir, entry);
      if (!statSync(dir).isDirectory() || !existsSync(join(dir, 'package.json'))) continue;
      const { manifest, error } = readManifest(join(dir, 'package.json'));
      found.push({ dir, source: 'plugins-dir', firstParty: false, manifest, manifestError: error });
    }
  }
  return found;
}

/** The package's main module, resolved like Node does for `import(name)` (exports `.`, then main). */
export function resolveEntry(dir: string, manifest: PackageManifest): string {
  const pick = (target: unknown): string | undefined => {
    if (typeof target === 'string') return target;
    if (target && typeof target === 'object') {
      const t = target as Record<string, unknown>;
      for (const condition of ['node', 'import', 'require', 'default']) {
        const hit = pick(t[condition]);
        if (hit) return hit;
      }
    }
    return undefined;
  };
  const exp = manifest.exports;
  const fromExports =
    exp && typeof exp === 'object' && !Array.isArray(exp) && Object.keys(exp).some((k) => k.startsWith('.')) ? pick((exp as Record<string, unknown>)['.']) : pick(exp);
  const relative = fromExports ?? manifest.main ?? 'index.js';
  const candidates = [relative, `${relative}.js`, join(relative, 'index.js')];
  for (const candidate of candidates) {
    const full = join(dir, candidate);
    if (existsSync(full) && statSync(full).isFile()) return full;
  }
  throw new Error(`entry point ${relative} not found in ${dir} (is the package built?)`);
}

function findPackageDir(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}

function readManifest(file: string): { manifest: PackageManifest | null; error?: string } {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { manifest: null, error: 'package.json is not an object' };
    return { manifest: parsed as PackageManifest };
  } catch (error) {
    return { manifest: null, error: `cannot read package.json: ${(error as Error).message}` };
  }
}
