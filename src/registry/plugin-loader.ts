import { API_VERSION, isEnvironment } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import { pathToFileURL } from 'node:url';
import { satisfies, valid } from 'semver';
import { PluginCandidate, resolveEntry } from './plugin-discovery';

export const SDK_PACKAGE = '@opentinker/env-sdk';

export interface PluginRecord {
  id: string | null;
  packageName: string | null;
  version: string | null;
  dir: string;
  source: PluginCandidate['source'];
  firstParty: boolean;
  status: 'loaded' | 'failed';
  error: string | null;
  environment: Environment<unknown, unknown> | null;
}

/**
 * Loads one candidate package and checks it: the marker, the SDK peer range against the host's SDK
 * version, the default export's brand and apiVersion, and that the marker id matches the definition.
 * Never throws: a failure is a record with its reason.
 */
export async function loadPlugin(candidate: PluginCandidate, hostSdkVersion: string): Promise<PluginRecord> {
  const m = candidate.manifest;
  const record: PluginRecord = {
    id: typeof m?.opentinker?.id === 'string' ? m.opentinker.id : null,
    packageName: m?.name ?? null,
    version: m?.version ?? null,
    dir: candidate.dir,
    source: candidate.source,
    firstParty: candidate.firstParty,
    status: 'failed',
    error: null,
    environment: null,
  };
  const fail = (error: string) => ({ ...record, error });
  if (!m) return fail(candidate.manifestError ?? 'no package.json');
  if (m.opentinker?.kind !== 'environment') return fail('package.json lacks "opentinker": { "kind": "environment", "id": "…" }');
  if (record.id === null) return fail('package.json "opentinker" marker has no string "id"');
  const range = m.peerDependencies?.[SDK_PACKAGE];
  if (!range) return fail(`package.json must declare peerDependencies["${SDK_PACKAGE}"] (e.g. "^${API_VERSION}")`);
  if (!valid(hostSdkVersion) || !satisfies(hostSdkVersion, range)) {
    return fail(`requires ${SDK_PACKAGE} ${range}, but this server has ${hostSdkVersion}`);
  }
  let loaded: unknown;
  try {
    const entry = resolveEntry(candidate.dir, m);
    loaded = await import(pathToFileURL(entry).href);
  } catch (error) {
    return fail(`failed to load: ${(error as Error)?.message ?? String(error)}`);
  }
  const env = unwrapDefault(loaded);
  if (!env) return fail('the default export is not an environment made by defineEnvironment()');
  if (env.apiVersion !== API_VERSION) {
    return fail(`built for environment API version ${env.apiVersion}; this server supports ${API_VERSION}`);
  }
  if (env.id !== record.id) return fail(`package.json declares id "${record.id}" but the environment's id is "${env.id}"`);
  return { ...record, status: 'loaded', environment: env };
}

/** `export default` of ESM, `module.exports =` of CJS, and TypeScript's compiled `exports.default`. */
function unwrapDefault(mod: unknown): Environment<unknown, unknown> | null {
  let value = (mod as { default?: unknown })?.default ?? mod;
  for (let i = 0; i < 2 && !isEnvironment(value); i++) value = (value as { default?: unknown })?.default;
  return isEnvironment(value) ? value : null;
}
