import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { discoverPlugins } from './plugin-discovery';
import { loadPlugin, PluginRecord, SDK_PACKAGE } from './plugin-loader';

/** Where environments are discovered. Free of Nest, so the job runner child process loads plugins the same way. */
export interface RegistryPaths {
  /** Folder of the server package, whose declared dependencies are searched. */
  hostRoot: string;
  pluginsDir: string;
}

/** Discovers and loads every candidate; throws for first-party failures and duplicate ids. */
export async function loadRegistry(paths: RegistryPaths): Promise<PluginRecord[]> {
  const sdkVersion = hostSdkVersion(paths.hostRoot);
  const records: PluginRecord[] = [];
  for (const candidate of discoverPlugins(paths.hostRoot, paths.pluginsDir)) {
    const record = await loadPlugin(candidate, sdkVersion);
    if (record.status === 'failed' && record.firstParty) {
      throw new Error(`First-party environment package ${record.packageName ?? record.dir} failed to load: ${record.error}`);
    }
    records.push(record);
  }
  const byId = new Map<string, PluginRecord>();
  for (const r of records) {
    if (r.status !== 'loaded' || !r.id) continue;
    const other = byId.get(r.id);
    if (other) {
      throw new Error(`Two environment packages declare the id "${r.id}": ${other.packageName} (${other.dir}) and ${r.packageName} (${r.dir}). Remove or rename one.`);
    }
    byId.set(r.id, r);
  }
  return records;
}

/** The SDK version this server provides to plugins. */
export function hostSdkVersion(hostRoot: string): string {
  for (const file of [join(hostRoot, 'node_modules', SDK_PACKAGE, 'package.json'), join(hostRoot, 'libs', 'env-sdk', 'package.json')]) {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    } catch {
      // try the next place
    }
  }
  throw new Error(`Cannot find ${SDK_PACKAGE} from ${hostRoot}`);
}
