import { join } from 'node:path';
import { z } from 'zod';
import type { AppConfigValues } from '../config/settings';

/** How this machine reaches the Hugging Face Hub and where it caches what it fetched (a worker hands it to its job runners). */
export const HubSettings = z.object({
  /** huggingface_hub's layout: `models--Org--Name/{blobs,snapshots,refs}`. */
  cacheDir: z.string(),
  /** Base URL, no trailing slash. */
  endpoint: z.string(),
  /**
   * This machine's bearer token (HF_TOKEN), or null. A job uses it only for {@link operatorRepos}; the
   * operator's own commands (`opentinker models pull`) use it for any repo.
   */
  token: z.string().nullable(),
  /** Setting hub_token_repos: `Org/Name` or `Org/*`, the repos served with {@link token} on any tenant's behalf. */
  operatorRepos: z.array(z.string()),
  /** HF_HUB_OFFLINE: answer from the cache only, never call the Hub. */
  offline: z.boolean(),
  /** Most bytes one repo's selected files may add up to; 0: no downloads at all. */
  maxDownloadBytes: z.number(),
});
export type HubSettings = z.output<typeof HubSettings>;

export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';

function truthy(value: string | undefined): boolean {
  return value !== undefined && ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());
}

/**
 * The Hub settings of this machine: the server settings `hub_cache_dir`, `hub_endpoint`,
 * `hub_max_download_bytes` and `hub_token_repos`, and huggingface_hub's own variables `HF_ENDPOINT`, `HF_TOKEN` (or the older
 * `HUGGING_FACE_HUB_TOKEN`) and `HF_HUB_OFFLINE`, so a machine set up for the Python tools works as it is.
 */
export function hubSettings(
  values: Pick<AppConfigValues, 'home' | 'hub_cache_dir' | 'hub_endpoint' | 'hub_max_download_bytes' | 'hub_token_repos'>,
  env: NodeJS.ProcessEnv = process.env,
): HubSettings {
  const endpoint = (values.hub_endpoint ?? (env.HF_ENDPOINT?.trim() || DEFAULT_HUB_ENDPOINT)).replace(/\/+$/, '');
  const token = env.HF_TOKEN?.trim() || env.HUGGING_FACE_HUB_TOKEN?.trim() || null;
  return {
    cacheDir: values.hub_cache_dir ?? join(values.home, 'hub'),
    endpoint,
    token,
    offline: truthy(env.HF_HUB_OFFLINE),
    maxDownloadBytes: values.hub_max_download_bytes,
    operatorRepos: values.hub_token_repos,
  };
}
