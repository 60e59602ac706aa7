import type { HostLimit, HostSetting } from './config-policy';
import { isHostOnlyKey } from './config-policy';
import type { Environment } from './environment';
import { parseConfig } from './environment';
import { EnvironmentError } from './errors';
import type { Split } from './split';

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
        throw new EnvironmentError('ENV_CONFIG_LIMIT', `config.${key} ${value} is above this server's limit ${ceiling} (operator setting ${p.limit})`, `config.${key}`);
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
