import { existsSync, readFileSync } from 'node:fs';
import { homedir, availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AppError, ErrorCode } from '../core/app-error';

/**
 * Every setting the server reads, in one typed object. Keys are snake_case; each one is also read from
 * the environment variable `OPENTINKER_<KEY>` (upper case), which wins over the YAML file named by
 * `OPENTINKER_CONFIG`. Validated once at boot: a bad value stops the process with the key's name.
 */
const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])]).transform(
  (v) => v === true || v === 'true' || v === '1' || v === 'yes',
);
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export const configSchema = z
  .object({
    home: z.string().min(1).default(join(homedir(), '.opentinker')),
    host: z.string().min(1).default('127.0.0.1'),
    port: int(0, 65535).default(8780),
    database_url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (leave unset for the embedded SQLite database)')
      .optional(),
    redis_url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional(),
    admin_key: z
      .string()
      .regex(/^otk_[A-Za-z0-9_-]{20,}$/, 'must look like otk_ followed by at least 20 URL-safe characters')
      .optional(),
    open_registration: booleanish.default(false),
    embedded_worker: booleanish.default(true),
    /** Threads that write job-list pages, each with its own read connection (0: the API thread does). */
    list_reader_threads: int(0, 16).default(2),
    worker_id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).optional(),
    cpu_slots: int(0, 1024).default(availableParallelism()),
    gpus: z
      .string()
      .regex(/^(auto|none|\d+(,\d+)*)$/, 'must be auto, none, or a comma-separated list of GPU indices')
      .default('auto'),
    max_jobs_per_user: int(1, 10_000).default(4),
    heartbeat_seconds: z.coerce.number().min(0.1).max(60).default(2),
    lease_seconds: z.coerce.number().min(1).max(3600).default(15),
    cancel_grace_seconds: z.coerce.number().min(0).max(600).default(5),
    body_limit_bytes: int(1024, 1024 ** 3).default(1024 * 1024),
    /** Largest dataset upload (POST /v1/datasets streams to disk, so this bounds disk use, not memory). */
    dataset_max_bytes: int(1024, 1024 ** 4).default(256 * 1024 * 1024),
    auth_failures_per_minute: int(1, 1_000_000).default(20),
    plugins_dir: z.string().min(1).optional(),
    log_level: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
    /** Checkpoints held in model server processes at once for chat completions (each is one process). */
    serving_max_models: int(1, 64).default(2),
    serving_idle_seconds: z.coerce.number().min(1).max(86_400).default(600),
    serving_request_timeout_seconds: z.coerce.number().min(1).max(3600).default(300),
  })
  .strict();

export type AppConfigValues = z.infer<typeof configSchema>;

/** The validated configuration, injectable by class. */
export class AppConfig {
  constructor(readonly values: Readonly<AppConfigValues>) {}

  get home(): string {
    return this.values.home;
  }

  get usesPostgres(): boolean {
    return this.values.database_url !== undefined;
  }

  get usesRedis(): boolean {
    return this.values.redis_url !== undefined;
  }

  jobDir(jobId: string): string {
    return join(this.values.home, 'jobs', jobId);
  }
}

const ENV_PREFIX = 'OPENTINKER_';
/** Environment variables with the prefix that are not settings (read by the CLI or the loader itself). */
const NON_SETTING_ENV = new Set(['CONFIG', 'API_KEY', 'URL']);

/**
 * Builds the configuration from (lowest to highest precedence) defaults, the YAML file named by
 * `OPENTINKER_CONFIG`, `OPENTINKER_*` environment variables and explicit overrides.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<keyof AppConfigValues, unknown>> = {},
): AppConfig {
  const raw: Record<string, unknown> = {};
  const file = env[`${ENV_PREFIX}CONFIG`];
  if (file) Object.assign(raw, readYamlConfig(file));
  const known = new Set(Object.keys(configSchema.shape));
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || value === undefined || value === '') continue;
    const suffix = name.slice(ENV_PREFIX.length);
    if (NON_SETTING_ENV.has(suffix)) continue;
    const key = suffix.toLowerCase();
    if (!known.has(key)) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `Unknown setting ${name}`, { field: name });
    }
    raw[key] = value;
  }
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) raw[key] = value;

  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue.path.join('.') || String((issue as { keys?: string[] }).keys?.[0] ?? '');
    const where = issue.code === 'unrecognized_keys' ? (issue.keys ?? []).join(', ') : key;
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `Invalid configuration: ${where}: ${issue.message} (env ${ENV_PREFIX}${where.toUpperCase()})`,
      { field: where },
    );
  }
  const values = { ...parsed.data, home: resolve(parsed.data.home) };
  if (values.redis_url && !values.database_url) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      'OPENTINKER_REDIS_URL needs OPENTINKER_DATABASE_URL (PostgreSQL): workers on other machines cannot share the embedded SQLite file',
      { field: 'database_url' },
    );
  }
  return new AppConfig(values);
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
export const SECRET_KEYS: ReadonlyArray<keyof AppConfigValues> = ['admin_key', 'database_url', 'redis_url'];

/** The configuration as it may be logged: secrets masked, credentials removed from URLs. */
export function redactConfig(values: AppConfigValues): Record<string, unknown> {
  const out: Record<string, unknown> = { ...values };
  for (const key of SECRET_KEYS) {
    const v = values[key];
    if (typeof v !== 'string') continue;
    out[key] = key === 'admin_key' ? 'otk_***' : v.replace(/\/\/[^@/]*@/, '//***@');
  }
  return out;
}
