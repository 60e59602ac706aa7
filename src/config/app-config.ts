import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { HostConfigInput, HostLimit } from '@opentinker/env-sdk';
import type { EngineSettings } from '@opentinker/engine/settings';
import { AppError, ErrorCode } from '../core/app-error';
import { HostPaths } from '../core/host-paths';
import { InstallLayout } from './install-layout';
import { configSchema, OTHER_VARIABLES, SETTINGS, settingEnvName, type AppConfigValues, type SettingKey } from './settings';

/** Where a setting's value came from, lowest precedence first. */
export type SettingSource = { kind: 'default' } | { kind: 'file'; file: string } | { kind: 'env'; name: string } | { kind: 'flag' };

/** The validated configuration, injectable by class. */
export class AppConfig {
  constructor(
    readonly values: Readonly<AppConfigValues>,
    /** Where each value came from (all `default` when built directly, as tests do). */
    readonly sources: Readonly<Partial<Record<SettingKey, SettingSource>>> = {},
    /** The installation's files. */
    readonly install: InstallLayout = new InstallLayout(),
  ) {}

  get home(): string {
    return this.values.home;
  }

  get usesPostgres(): boolean {
    return this.values.database_url !== undefined;
  }

  get usesRedis(): boolean {
    return this.values.redis_url !== undefined;
  }

  /** The drop-in environments folder: `plugins_dir`, else `<install>/plugins`. */
  get pluginsDir(): string {
    return this.values.plugins_dir ?? this.install.defaultPluginsDir;
  }

  /** The engine's settings, as job runners and model servers start it. */
  get engine(): EngineSettings {
    const v = this.values;
    const out: EngineSettings = { engine_backend: v.engine_backend, engine_matmul: v.engine_matmul, engine_device: v.engine_device };
    if (v.engine_threads !== undefined) out.engine_threads = v.engine_threads;
    if (v.engine_memory_mb !== undefined) out.engine_memory_mb = v.engine_memory_mb;
    return out;
  }

  /** The server's folders as tenants see them in errors and logs (`$OPENTINKER_HOME`, `<install>`, …). */
  get hostPaths(): HostPaths {
    this.hostPathsMemo ??= new HostPaths([
      [this.home, '$OPENTINKER_HOME'],
      [this.install.root, '<install>'],
      [this.pluginsDir, '<plugins>'],
      ...(this.values.hub_cache_dir ? ([[this.values.hub_cache_dir, '<hub_cache_dir>']] as const) : []),
    ]);
    return this.hostPathsMemo;
  }

  private hostPathsMemo?: HostPaths;

  jobDir(jobId: string): string {
    return join(this.values.home, 'jobs', jobId);
  }

  /** What this host contributes to a tenant's environment config: its sandbox ceilings and settings. */
  get environmentHost(): Required<Pick<HostConfigInput, 'limits' | 'settings'>> {
    const v = this.values;
    const limits: Record<HostLimit, number> = {
      sandbox_memory_mb: v.sandbox_memory_mb,
      sandbox_max_processes: v.sandbox_max_processes,
      sandbox_cpu_seconds: v.sandbox_cpu_seconds,
      sandbox_wall_seconds: v.sandbox_wall_seconds,
      sandbox_scratch_mb: v.sandbox_scratch_mb,
      sandbox_file_size_mb: v.sandbox_file_size_mb,
      sandbox_concurrent_runs: v.sandbox_concurrent_runs,
      sandbox_output_chars: v.sandbox_output_chars,
    };
    const settings: HostConfigInput['settings'] = {};
    if (v.sandbox_uid !== undefined) settings.sandbox_uid = v.sandbox_uid;
    if (v.sandbox_python !== undefined) settings.sandbox_python = v.sandbox_python;
    return { limits, settings };
  }
}

const ENV_PREFIX = 'OPENTINKER_';
const OTHER_VARIABLE_NAMES = new Set(OTHER_VARIABLES.map((v) => v.name));

export interface LoadConfigOptions {
  /** The installation's folder (default: the one this code is in). */
  root?: string;
}

/**
 * Builds the configuration from (lowest to highest precedence) defaults, the YAML file named by
 * `OPENTINKER_CONFIG`, `OPENTINKER_*` environment variables and explicit overrides (command-line
 * flags), remembering where each value came from. An `OPENTINKER_*` variable that is neither a setting
 * nor one of `OTHER_VARIABLES` is refused by name, as is an unknown key in the file.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<SettingKey, unknown>> = {}, options: LoadConfigOptions = {}): AppConfig {
  const raw: Record<string, unknown> = {};
  const sources: Partial<Record<SettingKey, SettingSource>> = {};
  const known = new Set<string>(Object.keys(SETTINGS));
  const file = env[`${ENV_PREFIX}CONFIG`];
  if (file) {
    for (const [key, value] of Object.entries(readYamlConfig(file))) {
      raw[key] = value;
      if (known.has(key)) sources[key as SettingKey] = { kind: 'file', file };
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || value === undefined || value === '' || OTHER_VARIABLE_NAMES.has(name)) continue;
    const key = name.slice(ENV_PREFIX.length).toLowerCase();
    if (!known.has(key)) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `Unknown setting ${name}`, { field: name });
    }
    raw[key] = value;
    sources[key as SettingKey] = { kind: 'env', name };
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    raw[key] = value;
    if (known.has(key)) sources[key as SettingKey] = { kind: 'flag' };
  }
  for (const key of known) sources[key as SettingKey] ??= { kind: 'default' };

  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue.path.join('.') || String((issue as { keys?: string[] }).keys?.[0] ?? '');
    const where = issue.code === 'unrecognized_keys' ? (issue.keys ?? []).join(', ') : key;
    throw new AppError(ErrorCode.CONFIG_INVALID, `Invalid configuration: ${where}: ${issue.message} (env ${settingEnvName(where)})`, { field: where });
  }
  const values = { ...parsed.data, home: resolve(parsed.data.home) };
  if (values.redis_url && !values.database_url) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      'OPENTINKER_REDIS_URL needs OPENTINKER_DATABASE_URL (PostgreSQL): workers on other machines cannot share the embedded SQLite file',
      { field: 'database_url' },
    );
  }
  return new AppConfig(values, sources, new InstallLayout(options.root));
}

function readYamlConfig(file: string): Record<string, unknown> {
  if (!existsSync(file)) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `Config file not found: ${file}`, { field: 'OPENTINKER_CONFIG' });
  }
  const doc: unknown = parseYaml(readFileSync(file, 'utf8'));
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `Config file ${file} must hold a mapping of settings`, {
      field: 'OPENTINKER_CONFIG',
    });
  }
  return doc as Record<string, unknown>;
}

/** Names of settings whose values must never be printed. */
export const SECRET_KEYS: ReadonlyArray<SettingKey> = (Object.keys(SETTINGS) as SettingKey[]).filter((k) => SETTINGS[k].secret);

/** One value as it may be shown: a key masked, credentials removed from a URL. */
export function redactSetting(key: SettingKey, value: unknown): unknown {
  const secret = (SETTINGS[key] as { secret?: 'key' | 'url' }).secret;
  if (!secret || typeof value !== 'string') return value;
  return secret === 'key' ? 'otk_***' : value.replace(/\/\/[^@/]*@/, '//***@');
}

/** The configuration as it may be logged: secrets masked, credentials removed from URLs. */
export function redactConfig(values: AppConfigValues): Record<string, unknown> {
  const out: Record<string, unknown> = { ...values };
  for (const key of SECRET_KEYS) out[key] = redactSetting(key, values[key]);
  return out;
}
