import { join } from 'node:path';
import { z } from 'zod';
import type { AppConfigValues } from '../config/settings';

/** How this machine reaches the Hugging Face Hub and where it caches what it fetched (a worker hands it to its job runners). */
export const HubSettings = z.object({
  /** huggingface_hub's layout: `models--Org--Name/{blobs,snapshots,refs}`. */
  cacheDir: z.string(),
  /** Base URL, no trailing slash. */
  endpoint: z.string(),
  /** Bearer token for gated and private repos (HF_TOKEN), or null. */
  token: z.string().nullable(),
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
 * The Hub settings of this machine: the server settings `hub_cache_dir`, `hub_endpoint` and
 * `hub_max_download_bytes`, and huggingface_hub's own variables `HF_ENDPOINT`, `HF_TOKEN` (or the older
 * `HUGGING_FACE_HUB_TOKEN`) and `HF_HUB_OFFLINE`, so a machine set up for the Python tools works as it is.
 */
export function hubSettings(
  values: Pick<AppConfigValues, 'home' | 'hub_cache_dir' | 'hub_endpoint' | 'hub_max_download_bytes'>,
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
  };
}
