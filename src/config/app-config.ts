import { existsSync, readFileSync } from 'node:fs';
import { homedir, availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { HostConfigInput, HostLimit } from '@opentinker/env-sdk';
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
/** A list: a YAML sequence, or a comma-separated string (environment variables). */
const list = z
  .union([z.array(z.string()), z.string()])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((x) => x.trim()).filter((x) => x !== ''));

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
    /**
     * Folders whose model folders tenants may name in `model.path` (absolute; a path must resolve, links
     * followed, inside one of them). Empty: only presets and `job:<id>` checkpoints of one's own jobs.
     */
    model_roots: list.pipe(z.array(z.string().regex(/^\//, 'must be absolute paths'))).default([]),
    /** Highest `priority` a plain user may give a job (admins: up to 100). */
    max_user_priority: int(-100, 100).default(0),
    /** Episodes one user may hold open at once on `/v1/environments/<id>/protocol` (per environment). */
    max_episodes_per_user: int(1, 100_000).default(64),
    /** Bytes of datasets and checkpoints one plain user may keep (0: no quota). */
    storage_quota_bytes: int(0, 1024 ** 5).default(50 * 1024 ** 3),
    /** Rows an uploaded dataset may have. */
    dataset_max_rows: int(1, 100_000_000).default(1_000_000),
    /** Longest JSONL line of an upload, in bytes. */
    dataset_max_line_bytes: int(1024, 1024 ** 3).default(8 * 1024 * 1024),
    /** Memory the thread that parses an upload may use (MiB); a file needing more is refused. */
    dataset_parse_memory_mb: int(64, 65_536).default(1024),
    /**
     * Remote environments (`environment.url`) tenants may use beyond public addresses: host names, IPs or
     * CIDR ranges, each optionally with `:port` (`10.0.0.0/8`, `envs.internal:8088`, `127.0.0.1:8090`).
     * Loopback, private, link-local and other non-public addresses are refused unless listed here; the
     * admin may also use loopback.
     */
    environment_url_allow: list.default([]),
    /** Set `environment_url_allow_public=false` to allow only the listed hosts. */
    environment_url_allow_public: booleanish.default(true),
    // Ceilings of the resources an environment's sandbox may give model-written code (the keys an
    // environment marks with `{ limit }` in its configPolicy, e.g. math-tool's memory_mb).
    sandbox_memory_mb: int(16, 1_048_576).default(1024),
    sandbox_max_processes: int(1, 4096).default(16),
    sandbox_cpu_seconds: int(1, 86_400).default(30),
    sandbox_wall_seconds: int(1, 86_400).default(60),
    sandbox_scratch_mb: int(1, 65_536).default(256),
    sandbox_file_size_mb: int(1, 65_536).default(64),
    sandbox_concurrent_runs: int(1, 1024).default(4),
    sandbox_output_chars: int(16, 100_000_000).default(65_536),
    /** The uid sandboxed code runs as when the server is root (default: the environment's, nobody). */
    sandbox_uid: int(1, 4_294_967_294).optional(),
    /** The interpreter inside a Python sandbox (default: the environment's, /usr/bin/python3). */
    sandbox_python: z.string().regex(/^\/usr\//, 'must live under /usr').optional(),
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
/**
 * Environment variables with the prefix that are not server settings: read by the CLI (API_KEY, URL),
 * `env serve` (ENV_TOKEN), the loader itself (CONFIG), the engine in a job runner (ENGINE_*),
 * set by the worker for its job runners (JOB_ID), or read by job runners (RUNNER_STACKS: print stack traces).
 */
const NON_SETTING_ENV = new Set(['CONFIG', 'API_KEY', 'URL', 'ENV_TOKEN', 'JOB_ID', 'RUNNER_STACKS', 'ENGINE_BACKEND', 'ENGINE_MATMUL', 'ENGINE_THREADS', 'ENGINE_MEMORY_MB', 'ENGINE_DEVICE']);

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
