import { stat } from 'node:fs/promises';
import { HubCache, type HubSnapshot } from './hub-cache';
import { formatHubRef, HUB_PREFIX, isHubRef, parseHubRef, type HubRef } from './hub-ref';
import { hubSettings } from './hub-settings';

/** A complete model snapshot of the cache, as a model list shows it. */
export interface CachedHubModel {
  /** `hf:Org/Name@<commit>`. */
  id: string;
  repo: string;
  commit: string;
  /** The snapshot folder (what a model server loads). */
  dir: string;
  /** The cache's branches and tags at this commit (`main`): `hf:Org/Name@main` names it too. */
  revisions: string[];
  /** Unix seconds: when the snapshot was written (pulled). */
  created: number;
  /** The repo's organisation; `huggingface` for a repo without one (`gpt2`). */
  owner: string;
  /** Model snapshots only. */
  type: 'model';
  /** The operator pulled it (`opentinker models pull`): every tenant may use it. */
  operatorShared: boolean;
}

/**
 * The Hugging Face models of this machine's Hub cache, found by name without a download or a call to the
 * Hub: what a server may serve from what its operator cached (docs/serving.md). Jobs resolve `hf:` paths
 * with `loadPolicy`, which downloads what the cache lacks. Names resolve through the cache alone
 * (`refs/` for a branch or tag, a commit sha as it is), with no memory between calls, so a pull by another
 * process shows at once.
 */
export class CachedHubModels {
  private readonly cache: HubCache;

  /** `values`: the server's settings (`hub_cache_dir`, …), as `hubSettings` reads them. */
  constructor(values: Parameters<typeof hubSettings>[0]) {
    this.cache = new HubCache(hubSettings(values));
  }

  /** The cache folder. */
  get cacheDir(): string {
    return this.cache.settings.cacheDir;
  }

  /** Whether a model name is a Hub name (`hf:…`) rather than a checkpoint's. */
  isHubName(model: string): boolean {
    return isHubRef(model);
  }

  /**
   * The name parsed (a malformed one throws the validation error naming `field`), its complete snapshot
   * (null when the cache lacks it) and whether the operator shared it. Who may use it is
   * `HubAccessService`'s to say.
   */
  async find(model: string, field: string): Promise<{ ref: HubRef; name: string; snapshot: HubSnapshot | null; operatorShared: boolean }> {
    const ref = parseHubRef(model, { field });
    const snapshot = ref.type === 'model' ? await this.cache.cachedSnapshot(ref) : null;
    return { ref, name: formatHubRef(ref), snapshot, operatorShared: snapshot !== null && (await this.cache.isShared(ref, snapshot.commit)) };
  }

  /** Every complete model snapshot of the cache, by repo then commit (whoever may use it). */
  async list(): Promise<CachedHubModel[]> {
    const out: CachedHubModel[] = [];
    for (const cached of await this.cache.list()) {
      if (cached.type !== 'model') continue;
      for (const commit of cached.snapshots) {
        const snapshot = await this.cache.cachedSnapshot({ type: 'model', repo: cached.repo, revision: commit });
        if (!snapshot) continue;
        const written = await stat(snapshot.dir).catch(() => null);
        out.push({
          id: hubModelId(cached.repo, commit),
          repo: cached.repo,
          commit,
          dir: snapshot.dir,
          revisions: Object.keys(cached.refs)
            .filter((revision) => cached.refs[revision] === commit)
            .sort(),
          created: Math.floor((written?.mtimeMs ?? 0) / 1000),
          owner: cached.repo.includes('/') ? cached.repo.split('/')[0] : 'huggingface',
          type: 'model',
          operatorShared: await this.cache.isShared(cached, commit),
        });
      }
    }
    return out;
  }
}

/** `hf:Org/Name@<commit>`: the one name of a snapshot, whichever revision named it. */
export function hubModelId(repo: string, commit: string): string {
  return `${HUB_PREFIX}${repo}@${commit}`;
}
