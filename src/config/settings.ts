import { homedir, availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ENGINE_SETTINGS, parseEngineSetting, type EngineSettingKey, type EngineSettings } from '@opentinker/engine/settings';
import { z } from 'zod';

/**
 * Every setting of the server, the worker, the job runner and the engine: one entry each, in the order
 * `docs/configuration.md` (generated from this file by `npm run docs:config`) lists them. A key is the
 * YAML key of the file named by `OPENTINKER_CONFIG` and, upper-cased after `OPENTINKER_`, its
 * environment variable. To add a setting, add an entry here and regenerate the docs.
 */

/** Headings of docs/configuration.md, in order. */
export const SETTING_SECTIONS = [
  'Server',
  'Storage and queue',
  'Workers and jobs',
  'Tenants and uploads',
  'Environments and sandboxes',
  'Serving',
  'Tinker API',
  'Models from the Hub',
  'Engine',
] as const;
export type SettingSection = (typeof SETTING_SECTIONS)[number];

export interface SettingDefinition<S extends z.ZodType = z.ZodType> {
  /** Parses the raw value (a YAML value, or an environment variable's string) and supplies the default. */
  schema: S;
  section: SettingSection;
  /** Markdown: what it does, in a sentence or two. */
  doc: string;
  /** The default as the docs show it, where it depends on the machine or nothing is set by default. */
  defaultText?: string;
  /** A value never printed: `key` is masked whole, `url` loses the credentials it holds. */
  secret?: 'key' | 'url';
  /** Command-line flags that set it (`serve` and `config` take them). */
  flags?: string[];
}

const setting = <S extends z.ZodType>(def: SettingDefinition<S>): SettingDefinition<S> => def;

const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])]).transform((v) => v === true || v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** A list: a YAML sequence, or a comma-separated string (environment variables). */
const list = z.union([z.array(z.string()), z.string()]).transform((v) => (Array.isArray(v) ? v : v.split(',')).map((x) => x.trim()).filter((x) => x !== ''));

/** An engine setting from the engine's own definition (`@opentinker/engine/settings`), checked by its validator. */
function engineSetting<K extends EngineSettingKey>(key: K): SettingDefinition<z.ZodType<EngineSettings[K]>> {
  const def = ENGINE_SETTINGS.find((d) => d.key === key);
  if (!def) throw new Error(`the engine has no setting ${key}`);
  // `optional()` first: zod refuses a missing key for a bare transform; the engine supplies the default.
  const schema = z
    .unknown()
    .optional()
    .pipe(
      z.unknown().transform((raw, ctx) => {
        try {
          return parseEngineSetting(key, raw);
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: (e as Error).message.replace(`${key} `, '') });
          return z.NEVER;
        }
      }),
    );
  const values = def.type === 'enum' ? ` One of ${def.values.map((v) => `\`${v}\``).join(', ')}.` : ` An integer from ${def.min} to ${def.max}.`;
  return { schema: schema as unknown as z.ZodType<EngineSettings[K]>, section: 'Engine', doc: def.doc + values, defaultText: def.defaultText };
}

export const SETTINGS = {
  // Server
  home: setting({
    schema: z.string().min(1).default(join(homedir(), '.opentinker')),
    section: 'Server',
    defaultText: '`~/.opentinker`',
    doc: 'Data directory: the SQLite database, job folders (logs, checkpoints, artifacts) and uploaded datasets.',
  }),
  host: setting({ schema: z.string().min(1).default('127.0.0.1'), section: 'Server', flags: ['--host'], doc: 'Address `serve` listens on.' }),
  port: setting({ schema: int(0, 65535).default(8780), section: 'Server', flags: ['--port'], doc: 'Port `serve` listens on.' }),
  admin_key: setting({
    schema: z
      .string()
      .regex(/^otk_[A-Za-z0-9_-]{20,}$/, 'must look like otk_ followed by at least 20 URL-safe characters')
      .optional(),
    section: 'Server',
    secret: 'key',
    defaultText: 'generated',
    doc: 'API key of the admin user created on first start (`otk_` and at least 20 URL-safe characters); without it one is generated and printed once.',
  }),
  secrets_key: setting({
    schema: z
      .string()
      .regex(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, 'must be 32 bytes as 64 hex digits or base64 (44 characters)')
      .optional(),
    section: 'Server',
    secret: 'key',
    defaultText: '`<home>/secrets.key`, created (0600) on first start',
    doc:
      'AES-256-GCM key that encrypts job secrets (`environment.token`, `trainer.wandb.api_key`, `model.hf_token`) in the database. ' +
      'Every API and worker process of one server needs the same key: set it on each, or copy `secrets.key` ([SECURITY.md](../SECURITY.md#secrets-at-rest)).',
  }),
  open_registration: setting({ schema: booleanish.default(false), section: 'Server', doc: 'Let anyone `POST /v1/users` (creates plain users).' }),
  body_limit_bytes: setting({ schema: int(1024, 1024 ** 3).default(1024 * 1024), section: 'Server', doc: 'Largest request body.' }),
  json_max_depth: setting({
    schema: int(8, 10_000).default(64),
    section: 'Server',
    doc:
      'Most objects and arrays one JSON body may nest, on every route (the API and `opentinker env serve`); deeper is `400 OT_ERR_JSON_TOO_DEEP` ' +
      '(`ENV_BAD_REQUEST` on the environment protocols) naming the field, before anything validates it. A dataset row nested deeper is a bad row.',
  }),
  auth_failures_per_minute: setting({
    schema: int(1, 1_000_000).default(20),
    section: 'Server',
    doc: 'Failed authentications per client address (IPv6: per /64), and per key id, before `429`; counted before any slow hashing, in a fixed 1 MiB table (a valid key is always accepted).',
  }),
  auth_key_checks: setting({
    schema: int(1, 64).default(1),
    section: 'Server',
    doc: 'Slow key checks (scrypt, ~50 ms of one thread each, for keys an operator chose that this process has not verified yet) running at once.',
  }),
  auth_key_check_queue: setting({
    schema: int(0, 100_000).default(256),
    section: 'Server',
    doc: 'Slow key checks waiting for one of `auth_key_checks`; beyond it `503 OT_ERR_AUTH_BUSY` (never "invalid key").',
  }),
  auth_key_check_timeout_seconds: setting({
    schema: int(1, 600).default(10),
    section: 'Server',
    doc: 'How long a slow key check may wait for its turn before `503 OT_ERR_AUTH_BUSY`.',
  }),
  log_level: setting({
    schema: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
    section: 'Server',
    doc: 'One of `error`, `warn`, `log`, `debug`, `verbose`; at `debug` and above `serve` prints its settings (secrets redacted).',
  }),

  // Storage and queue
  database_url: setting({
    schema: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (leave unset for the embedded SQLite database)')
      .optional(),
    section: 'Storage and queue',
    secret: 'url',
    defaultText: '— (SQLite under `home`)',
    doc: '`postgres://…` to use PostgreSQL instead of the embedded SQLite database (needed by workers on other machines).',
  }),
  redis_url: setting({
    schema: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .optional(),
    section: 'Storage and queue',
    secret: 'url',
    defaultText: '— (the database is the queue)',
    doc: '`redis://…` to queue jobs in BullMQ, for workers on other machines; needs `database_url`.',
  }),

  // Workers and jobs
  embedded_worker: setting({
    schema: booleanish.default(true),
    section: 'Workers and jobs',
    flags: ['--no-worker'],
    doc: 'Run a worker inside `serve`.',
  }),
  worker_id: setting({
    schema: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .optional(),
    section: 'Workers and jobs',
    defaultText: '`<hostname>-<random>`',
    doc: "This worker's identity (letters, digits, `.`, `_`, `-`; at most 64).",
  }),
  cpu_slots: setting({
    schema: int(0, 1024).default(availableParallelism()),
    section: 'Workers and jobs',
    defaultText: 'the number of cores',
    doc: 'CPU slots a worker offers to jobs.',
  }),
  gpus: setting({
    schema: z
      .string()
      .regex(/^(auto|none|\d+(,\d+)*)$/, 'must be auto, none, or a comma-separated list of GPU indices')
      .default('auto'),
    section: 'Workers and jobs',
    doc: 'GPUs a worker offers: `auto` (found with `nvidia-smi`), `none`, or indices such as `0,1`.',
  }),
  max_jobs_per_user: setting({ schema: int(1, 10_000).default(4), section: 'Workers and jobs', doc: 'Starting or running jobs one user may have at once.' }),
  max_queued_jobs_per_user: setting({
    schema: int(1, 1_000_000).default(1000),
    section: 'Workers and jobs',
    doc: 'Queued jobs one plain user may have at once; a submission past it is refused (`429 OT_ERR_QUEUED_JOBS_LIMIT`). Admins are exempt.',
  }),
  max_user_priority: setting({
    schema: int(-100, 100).default(0),
    section: 'Workers and jobs',
    doc: 'Highest job `priority` a plain user may give (admins: up to 100).',
  }),
  heartbeat_seconds: setting({
    schema: z.coerce.number().min(0.1).max(60).default(2),
    section: 'Workers and jobs',
    doc: 'How often a worker renews the lease of each job it runs.',
  }),
  lease_seconds: setting({
    schema: z.coerce.number().min(1).max(3600).default(15),
    section: 'Workers and jobs',
    doc: "How long a job's lease lasts; a job whose worker stops renewing it is queued again.",
  }),
  cancel_grace_seconds: setting({
    schema: z.coerce.number().min(0).max(600).default(5),
    section: 'Workers and jobs',
    doc: 'Time between `SIGTERM` and `SIGKILL` when a job is cancelled or its worker shuts down.',
  }),
  model_roots: setting({
    schema: list.pipe(z.array(z.string().regex(/^\//, 'must be absolute paths'))).default([]),
    section: 'Workers and jobs',
    defaultText: '—',
    doc:
      'Folders whose model folders tenants may name in `model.path` (absolute, comma-separated; a path must resolve, links followed, ' +
      "inside one of them). Without it only presets and `job:<id>` checkpoints of one's own jobs.",
  }),
  runner_stacks: setting({
    schema: booleanish.default(false),
    section: 'Workers and jobs',
    doc: "Job runners print the stack trace of a failure in the job's log (which its owner reads), not only the message.",
  }),
  wandb_stream_seconds: setting({
    schema: z.coerce.number().min(0.1).max(3600).default(15),
    section: 'Workers and jobs',
    doc: "How often a train job that streams to W&B (`trainer.wandb.api_key`, [metrics.md](metrics.md)) sends what it logged since, as wandb-core's file stream does.",
  }),
  wandb_finish_seconds: setting({
    schema: z.coerce.number().min(0).max(600).default(10),
    section: 'Workers and jobs',
    doc: "How long a streaming job's end waits for W&B to take the rest of the run (after its files and artifacts are saved); what is left is only in the job's offline run.",
  }),

  // Tenants and uploads
  storage_quota_bytes: setting({
    schema: int(0, 1024 ** 5).default(50 * 1024 ** 3),
    section: 'Tenants and uploads',
    defaultText: '`53687091200` (50 GiB)',
    doc: 'Bytes of datasets, uploaded models and checkpoints one plain user may keep (`0`: no quota).',
  }),
  dataset_max_bytes: setting({
    schema: int(1024, 1024 ** 4).default(256 * 1024 * 1024),
    section: 'Tenants and uploads',
    defaultText: '`268435456` (256 MiB)',
    doc: 'Largest dataset upload (`POST /v1/datasets` streams to disk, so this bounds disk use, not memory).',
  }),
  model_upload_max_bytes: setting({
    schema: int(1024, 1024 ** 5).default(20 * 1024 ** 3),
    section: 'Tenants and uploads',
    defaultText: '`21474836480` (20 GiB)',
    doc: 'Largest model folder upload (`POST /v1/models`, a tar stream written to disk file by file; the storage quota applies too).',
  }),
  dataset_max_rows: setting({ schema: int(1, 100_000_000).default(1_000_000), section: 'Tenants and uploads', doc: 'Rows an uploaded dataset may have.' }),
  dataset_max_line_bytes: setting({
    schema: int(1024, 1024 ** 3).default(8 * 1024 * 1024),
    section: 'Tenants and uploads',
    doc: 'Longest JSONL line of an upload, in bytes.',
  }),
  dataset_parse_memory_mb: setting({
    schema: int(64, 65_536).default(1024),
    section: 'Tenants and uploads',
    doc: 'Memory (MiB) of the separate process that parses an upload; a file needing more is refused.',
  }),

  // Environments and sandboxes
  plugins_dir: setting({
    schema: z.string().min(1).optional(),
    section: 'Environments and sandboxes',
    defaultText: '`<install>/plugins`',
    doc: 'Folder of drop-in environment packages.',
  }),
  max_episodes_per_user: setting({
    schema: int(1, 100_000).default(64),
    section: 'Environments and sandboxes',
    doc: 'Episodes one user may hold open at once on `/v1/environments/<id>/protocol` (per environment).',
  }),
  environment_url_allow: setting({
    schema: list.default([]),
    section: 'Environments and sandboxes',
    defaultText: '—',
    doc:
      'Remote environments (`environment.url`) jobs may use besides public addresses: host names, IPs or CIDR ranges, each optionally ' +
      'with `:port` (`10.0.0.0/8`, `envs.internal:8088`, `127.0.0.1:8090`), comma-separated. Loopback, private, link-local and other ' +
      'non-public addresses are refused unless listed here; the admin may also use loopback.',
  }),
  environment_url_allow_public: setting({
    schema: booleanish.default(true),
    section: 'Environments and sandboxes',
    doc: '`false`: jobs may reach only the hosts in `environment_url_allow`.',
  }),
  sandbox_memory_mb: setting({
    schema: int(16, 1_048_576).default(1024),
    section: 'Environments and sandboxes',
    doc: "Most memory (MiB) an environment's sandbox may give model-written code (the ceiling of keys an environment marks `{ limit }`, such as math-tool's `memory_mb`).",
  }),
  sandbox_max_processes: setting({ schema: int(1, 4096).default(16), section: 'Environments and sandboxes', doc: 'Most processes sandboxed code may run.' }),
  sandbox_cpu_seconds: setting({ schema: int(1, 86_400).default(30), section: 'Environments and sandboxes', doc: 'Most CPU seconds of one sandboxed run.' }),
  sandbox_wall_seconds: setting({ schema: int(1, 86_400).default(60), section: 'Environments and sandboxes', doc: 'Most wall-clock seconds of one sandboxed run.' }),
  sandbox_scratch_mb: setting({ schema: int(1, 65_536).default(256), section: 'Environments and sandboxes', doc: 'Scratch space (MiB) of one sandboxed run.' }),
  sandbox_file_size_mb: setting({ schema: int(1, 65_536).default(64), section: 'Environments and sandboxes', doc: 'Largest file (MiB) sandboxed code may write.' }),
  sandbox_concurrent_runs: setting({ schema: int(1, 1024).default(4), section: 'Environments and sandboxes', doc: 'Sandboxed runs at once.' }),
  sandbox_output_chars: setting({ schema: int(16, 100_000_000).default(65_536), section: 'Environments and sandboxes', doc: 'Characters of output kept from one sandboxed run.' }),
  sandbox_uid: setting({
    schema: int(1, 4_294_967_294).optional(),
    section: 'Environments and sandboxes',
    defaultText: "the environment's (nobody)",
    doc: 'The uid sandboxed code runs as when the server runs as root.',
  }),
  sandbox_python: setting({
    schema: z
      .string()
      .regex(/^\/usr\//, 'must live under /usr')
      .optional(),
    section: 'Environments and sandboxes',
    defaultText: "the environment's (`/usr/bin/python3`)",
    doc: 'The interpreter inside a Python sandbox (under `/usr`).',
  }),

  // Serving
  serving_max_models: setting({
    schema: int(1, 64).default(2),
    section: 'Serving',
    doc: 'Checkpoints held at once for chat completions (each in its own model server process).',
  }),
  serving_idle_seconds: setting({ schema: z.coerce.number().min(1).max(86_400).default(600), section: 'Serving', doc: 'Stop a model server unused this long.' }),
  serving_request_timeout_seconds: setting({
    schema: z.coerce.number().min(1).max(3600).default(300),
    section: 'Serving',
    doc: 'Longest chat request; its model server is killed past it.',
  }),

  // Tinker API (docs/tinker.md)
  tinker_session_timeout_seconds: setting({
    schema: z.coerce.number().min(5).max(86_400).default(120),
    section: 'Tinker API',
    doc: 'A Tinker SDK session without a heartbeat this long expires: its runners stop and its futures fail (the SDK sends one every 10 s).',
  }),
  tinker_session_yield_seconds: setting({
    schema: z.coerce.number().min(5).max(86_400).default(30),
    section: 'Tinker API',
    doc: "A Tinker SDK session without a heartbeat this long expires early while a job waits for devices, so a program that exited without ServiceClient.close (the cookbook's recipes never call it) frees its runner's devices for the next one; at most tinker_session_timeout_seconds.",
  }),
  tinker_max_sessions_per_user: setting({
    schema: int(1, 100_000).default(8),
    section: 'Tinker API',
    doc: 'Active Tinker sessions one user may have; `create_session` past it is refused (400 `OT_ERR_LIMIT_EXCEEDED`).',
  }),
  tinker_max_models_per_session: setting({
    schema: int(1, 100_000).default(64),
    section: 'Tinker API',
    doc: 'Training clients one Tinker session may create (`create_model`, `create_training_client_from_state`).',
  }),
  tinker_max_adapters_per_base: setting({
    schema: int(1, 10_000).default(16),
    section: 'Tinker API',
    doc: "Training clients (LoRA adapters with their Adam state) one session's runner holds on one base model.",
  }),
  tinker_adapter_memory_mb: setting({
    schema: int(1, 1_048_576).default(4096),
    section: 'Tinker API',
    doc: "Memory (MiB) a session's runner gives adapters, their gradients and Adam states, and sampler snapshots; more is refused with the size and this setting.",
  }),
  tinker_samplers_per_model: setting({
    schema: int(1, 1000).default(8),
    section: 'Tinker API',
    doc: 'Unnamed sampler snapshots (`save_weights_and_get_sampling_client`) kept per training client; older ones are released, and sampling with one says so.',
  }),
  tinker_seq_gap_seconds: setting({
    schema: z.coerce.number().min(0).max(3600).default(60),
    section: 'Tinker API',
    doc: "How long a training client's request waits for an earlier `seq_id` that never arrived before the runner goes on without it.",
  }),
  tinker_max_sample_tokens: setting({
    schema: int(1, 1_000_000).default(4096),
    section: 'Tinker API',
    doc: 'Most tokens one sample may generate (also the default when `max_tokens` is unset, within the model’s context).',
  }),
  tinker_max_open_requests: setting({
    schema: int(1, 1_000_000).default(4096),
    section: 'Tinker API',
    doc: "Requests a session's runner may have waiting; more are answered 429 (the SDK backs off and sends them again).",
  }),
  tinker_request_max_bytes: setting({
    schema: int(1024, 1024 ** 3).default(64 * 1024 ** 2),
    section: 'Tinker API',
    defaultText: '`67108864` (64 MiB)',
    doc: 'Largest `forward_backward` body, as sent and after zstd decompression.',
  }),
  tinker_poll_seconds: setting({
    schema: z.coerce.number().min(0).max(40).default(30),
    section: 'Tinker API',
    doc: '`retrieve_future` holds a poll this long for the result before answering `try_again` (the SDK gives up on a poll after 45 s).',
  }),
  tinker_result_keep_seconds: setting({
    schema: z.coerce
      .number()
      .min(1)
      .max(30 * 86_400)
      .default(3600),
    section: 'Tinker API',
    doc: 'How long an answered request and its result stay retrievable.',
  }),
  tinker_cpu_slots: setting({
    schema: int(0, 1024).default(1),
    section: 'Tinker API',
    doc: "CPU slots a session's runner (the job of one base model) takes from the worker that runs it.",
  }),
  tinker_gpus: setting({ schema: int(0, 64).default(0), section: 'Tinker API', doc: "GPUs a session's runner takes." }),

  hub_cache_dir: setting({
    schema: z.string().regex(/^\//, 'must be an absolute path').optional(),
    section: 'Models from the Hub',
    defaultText: '`<home>/hub`',
    doc: "Where `hf:` models and datasets are cached, in huggingface_hub's layout (`models--Org--Name/…`); see [models.md](models.md).",
  }),
  hub_max_download_bytes: setting({
    schema: int(0, 1024 ** 5).default(32 * 1024 ** 3),
    section: 'Models from the Hub',
    defaultText: '`34359738368` (32 GiB)',
    doc: 'Most bytes the files fetched for one `hf:` repo may add up to (`0`: no Hub downloads, the cache only).',
  }),
  hub_endpoint: setting({
    schema: z.url().optional(),
    section: 'Models from the Hub',
    defaultText: '`HF_ENDPOINT`, else `https://huggingface.co`',
    doc: "The Hugging Face Hub's base URL. `HF_TOKEN` and `HF_HUB_OFFLINE` are read as huggingface_hub reads them.",
  }),
  hub_token_repos: setting({
    schema: list.pipe(z.array(z.string().regex(/^[A-Za-z0-9_.-]+(\/([A-Za-z0-9_.-]+|\*))?$/, 'must be Org/Name, Name or Org/* (every repo of Org)'))).default([]),
    section: 'Models from the Hub',
    defaultText: '—',
    doc:
      "Repos (`Org/Name`, or `Org/*`) that jobs fetch with this machine's `HF_TOKEN` whoever submits them; their snapshots are every tenant's. " +
      "Any other repo is fetched without a token, or with the job owner's own (`model.hf_token`), and what an owner's token fetched is that owner's alone ([models.md](models.md#who-may-use-a-snapshot)).",
  }),

  // Engine: defined by the engine package; job runners and model servers start it with these values.
  engine_backend: engineSetting('engine_backend'),
  engine_matmul: engineSetting('engine_matmul'),
  engine_threads: engineSetting('engine_threads'),
  engine_memory_mb: engineSetting('engine_memory_mb'),
  engine_device: engineSetting('engine_device'),
};

export type SettingKey = keyof typeof SETTINGS;

type SettingsShape = { [K in SettingKey]: (typeof SETTINGS)[K]['schema'] };

/** The schema of the whole configuration: unknown keys are refused by name. */
export const configSchema = z.strictObject(Object.fromEntries(Object.entries(SETTINGS).map(([key, def]) => [key, def.schema])) as SettingsShape);

export type AppConfigValues = z.infer<typeof configSchema>;

/** The environment variable of a setting. */
export function settingEnvName(key: string): string {
  return `OPENTINKER_${key.toUpperCase()}`;
}

/**
 * `OPENTINKER_*` variables that are not settings, each read by one program, listed here so the settings
 * loader lets them pass and the docs describe them with the settings.
 */
export const OTHER_VARIABLES: ReadonlyArray<{ name: string; readBy: string; doc: string }> = [
  {
    name: 'OPENTINKER_CONFIG',
    readBy: 'server commands (`serve`, `worker`, `config`, `env serve`, `quickstart`)',
    doc: 'Path of a YAML file of settings (keys as above), read below the environment variables.',
  },
  { name: 'OPENTINKER_URL', readBy: 'client commands, `login`', doc: 'The server the CLI talks to (after `--url`, before the saved login; default `http://127.0.0.1:8780`).' },
  { name: 'OPENTINKER_API_KEY', readBy: 'client commands', doc: 'The API key the CLI sends (before the saved login).' },
  { name: 'OPENTINKER_ENV_TOKEN', readBy: '`env serve`', doc: 'The bearer token callers must send (the same as `--token`).' },
  {
    name: 'OPENTINKER_JOB_ID',
    readBy: 'nobody: set by the worker',
    doc: "Set in each job runner's environment to its job's id, so that an operator can tell its processes apart.",
  },
  { name: 'OPENTINKER_UPDATE_SCREENSHOT', readBy: 'the integration tests', doc: '`1` rewrites `docs/dashboard.png`.' },
  { name: 'OPENTINKER_TORCH_PYTHON', readBy: "the engine's PyTorch comparison benchmark", doc: 'The Python that has PyTorch (same as `--python`).' },
];
