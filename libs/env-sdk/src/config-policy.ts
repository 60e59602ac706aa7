import { EnvironmentError } from './errors';
import type { Environment, Split } from './environment';
import { parseConfig } from './environment';

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

/** What a host contributes to a tenant's config. */
export interface HostConfigInput {
  /**
   * The operator's own config (e.g. `opentinker env serve --config`), under the tenant's: trusted, so it
   * may set host-only keys; the tenant's keys override it within the policy.
   */
  base?: Record<string, unknown>;
  /** Data files of uploaded datasets, per split (absolute paths the host resolved from dataset ids). */
  datasets?: Partial<Record<Split, string>>;
  /** The host's values for `{ set: 'host' }` keys; unset leaves the environment's default. */
  settings?: Partial<Record<HostSetting, string | number | boolean>>;
  /** The host's ceilings for `{ limit }` keys; unset means no ceiling. */
  limits?: Partial<Record<HostLimit, number>>;
}

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
export function datasetConfigKey(env: Pick<Environment<unknown, unknown>, 'configPolicy'>, split: Split): string | null {
  for (const [key, p] of Object.entries(env.configPolicy ?? {})) if ('set' in p && p.set === 'dataset' && p.split === split) return key;
  return null;
}

/**
 * A tenant's config made safe for this host, then validated and defaulted by the environment's schema:
 * host-only keys are refused (`ENV_CONFIG_FORBIDDEN`, naming the key), values above a ceiling are refused
 * (`ENV_CONFIG_LIMIT`, naming the key, the ceiling and the host setting), the host's dataset files and
 * settings are filled in, and defaults above a ceiling are lowered to it. Hosts call this instead of
 * {@link parseConfig} for every config that came from a tenant.
 *
 * @example
 * ```ts
 * resolveTenantConfig(mathTool, { memory_mb: 256 }, { limits: { sandbox_memory_mb: 1024 } }); // ok, memory_mb 256
 * resolveTenantConfig(mathTool, { memory_mb: 1 << 20 }, { limits: { sandbox_memory_mb: 1024 } }); // throws ENV_CONFIG_LIMIT, field config.memory_mb
 * resolveTenantConfig(math, { train_path: '/etc/passwd' }, {}); // throws ENV_CONFIG_FORBIDDEN, field config.train_path
 * ```
 */
export function resolveTenantConfig<Config>(env: Environment<Config, unknown>, tenant: unknown, host: HostConfigInput = {}): Config {
  const policy = env.configPolicy;
  if (tenant !== undefined && tenant !== null && (typeof tenant !== 'object' || Array.isArray(tenant))) {
    throw new EnvironmentError('ENV_INVALID_CONFIG', 'config must be an object', 'config');
  }
  const given: Record<string, unknown> = { ...((tenant as Record<string, unknown> | null | undefined) ?? {}) };
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined) continue;
    if (isHostOnlyKey(policy, key)) {
      const p = policy?.[key];
      const how =
        p && 'set' in p && p.set === 'dataset'
          ? `upload a dataset (POST /v1/datasets) and name it with environment.${p.split === 'train' ? 'dataset' : 'val_dataset'}`
          : 'it is set by the server operator';
      throw new EnvironmentError('ENV_CONFIG_FORBIDDEN', `config.${key} cannot be set in a request: ${how}`, `config.${key}`);
    }
    const p = policy?.[key];
    if (p && 'limit' in p) {
      const ceiling = host.limits?.[p.limit];
      if (ceiling !== undefined && typeof value === 'number' && value > ceiling) {
        throw new EnvironmentError(
          'ENV_CONFIG_LIMIT',
          `config.${key} ${value} is above this server's limit ${ceiling} (operator setting ${p.limit})`,
          `config.${key}`,
        );
      }
    }
  }
  const raw: Record<string, unknown> = { ...(host.base ?? {}), ...given };
  for (const [key, p] of Object.entries(policy ?? {})) {
    if (!('set' in p)) continue;
    if (p.set === 'dataset' && host.datasets?.[p.split] !== undefined) raw[key] = host.datasets[p.split];
    if (p.set === 'host' && host.settings?.[p.setting] !== undefined) raw[key] = host.settings[p.setting];
  }
  const config = parseConfig(env, raw) as Record<string, unknown>;
  for (const [key, p] of Object.entries(policy ?? {})) {
    if (!('limit' in p)) continue;
    const ceiling = host.limits?.[p.limit];
    if (ceiling !== undefined && typeof config[key] === 'number' && (config[key] as number) > ceiling) config[key] = ceiling;
  }
  return config as Config;
}
