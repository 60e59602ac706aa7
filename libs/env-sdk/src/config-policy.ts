import type { Split } from './split';

/**
 * Resource ceilings a host (the OpenTinker server, or `opentinker env serve`) sets for the keys an
 * environment marks with `{ limit }`. The names are the host's settings (`OPENTINKER_SANDBOX_MEMORY_MB`,
 * …), so one operator setting caps every environment that runs model-written code.
 */
export const HOST_LIMITS = [
  'sandbox_memory_mb',
  'sandbox_max_processes',
  'sandbox_cpu_seconds',
  'sandbox_wall_seconds',
  'sandbox_scratch_mb',
  'sandbox_file_size_mb',
  'sandbox_concurrent_runs',
  'sandbox_output_chars',
] as const;
export type HostLimit = (typeof HOST_LIMITS)[number];

/** Values only a host's operator chooses, for the keys an environment marks with `{ set: 'host' }`. */
export const HOST_SETTINGS = ['sandbox_uid', 'sandbox_python'] as const;
export type HostSetting = (typeof HOST_SETTINGS)[number];

/**
 * Who may set one config key:
 * - `{ set: 'dataset', split }`: a data file the host fills in from an uploaded dataset (the job spec's
 *   `environment.dataset` for `train`, `val_dataset` for `test`). A tenant never names it: a path from a
 *   tenant would let it read any file the server can.
 * - `{ set: 'host', setting }`: the host fills it from its own setting (or leaves the default); a
 *   tenant never sets it (e.g. the uid sandboxed code runs as).
 * - `{ limit }`: a tenant may set it, up to the host's ceiling of that name; a default above the ceiling
 *   is lowered to it.
 * - `{ set: 'tenant' }`: a tenant may set it freely. Only needed for a key whose name ends in `_path`,
 *   `_dir`, `_file` or `_url`, which hosts otherwise treat as host-only (see {@link isHostOnlyKey}).
 */
export type ConfigKeyPolicy = { set: 'dataset'; split: Split } | { set: 'host'; setting: HostSetting } | { limit: HostLimit } | { set: 'tenant' };

/** Per key of an environment's config: who may set it. Keys not listed are the tenant's. */
export type ConfigPolicy = Readonly<Record<string, ConfigKeyPolicy>>;

/** Key names that, undeclared, would let a tenant point the environment at the host's files or network. */
const HOST_ONLY_NAME = /_(path|dir|file|url)$/;

/**
 * Whether a tenant is refused `key`: declared `dataset` or `host`, or an undeclared key whose name says it
 * is a path or a URL (a safety net for environments written before the policy existed).
 */
export function isHostOnlyKey(policy: ConfigPolicy | undefined, key: string): boolean {
  const p = policy?.[key];
  if (p === undefined) return HOST_ONLY_NAME.test(key);
  return 'set' in p && (p.set === 'dataset' || p.set === 'host');
}

/** The config key a dataset of `split` goes into, or null when the environment reads no dataset file for it. */
export function datasetConfigKey(env: { readonly configPolicy?: ConfigPolicy }, split: Split): string | null {
  for (const [key, p] of Object.entries(env.configPolicy ?? {})) if ('set' in p && p.set === 'dataset' && p.split === split) return key;
  return null;
}
