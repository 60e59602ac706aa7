import { z } from 'zod';
import type { ConfigKeyPolicy, ConfigPolicy } from './config-policy';
import { HOST_LIMITS, HOST_SETTINGS } from './config-policy';
import { EnvironmentError } from './errors';
import type { JsonObject, JsonValue, Message } from './messages';
import type { StepInfo } from './step-info';
import type { Split } from './split';

/** The contract version this SDK implements. A host refuses definitions with another major. */
export const API_VERSION = 1;
/**
 * The `$$type` every definition made by {@link defineEnvironment} carries. Hosts recognise an
 * environment by this brand (and {@link API_VERSION}), never with `instanceof`, so two copies of the
 * SDK in one install still understand each other.
 */
export const ENVIRONMENT_BRAND = '@opentinker/environment' as const;

export type { Split } from './split';
/**
 * `single`: one action ends the episode (answer a question); `multi`: the episode goes on over several
 * turns until the environment says `done` (a game, a tool loop).
 */
export type TurnMode = 'single' | 'multi';

/** What an environment returns for one action. */
export interface StepResult {
  /** Text appended to the conversation for the next turn (empty when done). */
  observation: string;
  /** Who speaks the observation: a user message (default) or a tool result. */
  observationRole?: 'user' | 'tool';
  reward: number;
  done: boolean;
  /**
   * Facts about the step, JSON only. Hosts read the {@link StepInfo} standard fields of the last step by
   * name (`correct` becomes accuracy, `result` win/loss/draw rates) and report the other numeric fields as
   * means: see "What the trainer reads" in the SDK's README.
   */
  info: StepInfo;
}

/** One episode: a conversation between the policy and the environment. */
export interface Episode<Task = JsonValue> {
  /** Starts the episode on a task; returns the first messages (system prompt and first user message). */
  reset(task: Task, seed: number): Message[] | Promise<Message[]>;
  /** Answers the policy's text. Never throws for a bad action: that is an error observation. */
  step(action: string): StepResult | Promise<StepResult>;
  /** Frees what the episode holds. Idempotent. */
  close(): void | Promise<void>;
}

/**
 * Tasks of an environment. Data-dependent environments serve dataset rows (finite splits);
 * data-free ones generate task `index` of a split from the index itself (endless train split).
 */
export interface TaskSet<Task = JsonValue> {
  /** Number of tasks in a split, or `null` for an endless generator. */
  size(split: Split): number | null;
  /** The task at `index` of a split; the same index always gives the same task. */
  get(split: Split, index: number): Task | Promise<Task>;
}

/** What the host gives an environment instance. */
export interface EnvironmentContext {
  /** A folder the environment may use for scratch files and caches. */
  workDir: string;
  log(message: string): void;
}

/**
 * Statistics a remote server keeps per batch of episodes (OpenTinker's game servers: win rate, mean game
 * length, …). Hosts call `begin` before a batch (training step or validation) and `read` after it, and
 * report what `read` returns beside their own metrics. Neither may fail a job: errors are swallowed.
 */
export interface BatchStats {
  begin(): Promise<void>;
  /** Numbers only, by name (e.g. `{ games_in_step: 8, mean_final_reward: 0.5 }`). */
  read(): Promise<Record<string, number>>;
}

/** An environment made ready for a configuration: hands out episodes and tasks. */
export interface EnvironmentInstance<Task = JsonValue> {
  tasks: TaskSet<Task>;
  newEpisode(): Episode<Task>;
  /** Per-batch statistics the environment keeps itself, when it has any (see {@link BatchStats}). */
  batchStats?: BatchStats;
  /** Frees shared resources (sandboxes, datasets). Idempotent. */
  close?(): void | Promise<void>;
}

/**
 * The environment contract. Write one with
 * {@link defineEnvironment}, which checks it and brands it.
 */
export interface Environment<Config = Record<string, unknown>, Task = JsonValue> {
  readonly $$type: typeof ENVIRONMENT_BRAND;
  readonly apiVersion: number;
  readonly id: string;
  readonly version: string;
  readonly description: string;
  readonly turnMode: TurnMode;
  /** `dataset`: tasks come from data rows; `generator`: tasks are made from seeds. */
  readonly taskSource: 'dataset' | 'generator';
  /** Validates and fills defaults of a user's config. */
  readonly configSchema: z.ZodType<Config>;
  /** Who may set which config key (see {@link ConfigPolicy}); keys not listed are the tenant's. */
  readonly configPolicy?: ConfigPolicy;
  create(config: Config, ctx: EnvironmentContext): EnvironmentInstance<Task> | Promise<EnvironmentInstance<Task>>;
  /**
   * Optional check of one row of an uploaded dataset (a parsed JSONL line or parquet row) for a
   * `taskSource: 'dataset'` environment: returns `null` when the row can become a task, otherwise a short
   * reason (`"no ground truth (reward_model.ground_truth or answer)"`). Hosts run it on uploads to report
   * bad rows before any job starts. Must be pure, fast and synchronous; it must not throw (a throw counts
   * as a bad row). Without it, a host accepts any JSON object as a row.
   */
  validateRow?(row: JsonObject): string | null;
}

/**
 * What an author gives {@link defineEnvironment}: the {@link Environment} without its brand and
 * `apiVersion`, which the SDK adds.
 */
export interface EnvironmentOptions<Config, Task> {
  /** Lower-case letters, digits and dashes, starting with a letter (the package.json marker's id). */
  id: string;
  /** The environment's own version (usually its package version), reported by hosts. */
  version: string;
  /** One line shown in listings. */
  description: string;
  turnMode: TurnMode;
  /** `dataset`: tasks come from data rows; `generator`: tasks are made from their index. */
  taskSource: 'dataset' | 'generator';
  /** Validates a user's config and fills its defaults; make it `.strict()` so typos are refused. */
  configSchema: z.ZodType<Config>;
  /**
   * Keys a tenant must not set, or may set only up to a host's ceiling: dataset files the host fills in
   * from uploads, values the operator chooses (a sandbox uid), resource limits (sandbox memory, CPU).
   * Hosts apply it with `resolveTenantConfig` to every config that comes from a request; see
   * {@link ConfigPolicy}. Declare every key that names a file, a folder or a URL the environment opens.
   */
  configPolicy?: ConfigPolicy;
  /** Makes an instance for a validated config; do expensive setup (datasets, sandboxes) here. */
  create(config: Config, ctx: EnvironmentContext): EnvironmentInstance<Task> | Promise<EnvironmentInstance<Task>>;
  /** See {@link Environment.validateRow}. */
  validateRow?(row: JsonObject): string | null;
}

const ID_PATTERN = /^[a-z][a-z0-9-]{0,63}$/;

/**
 * Declares an environment. Returns a frozen, branded object: the default export of an environment
 * package. Importing it must have no side effects — do the work in `create`.
 *
 * @example
 * ```ts
 * import { defineEnvironment, EnvironmentError, z } from '@opentinker/env-sdk';
 *
 * export default defineEnvironment({
 *   id: 'echo',
 *   version: '1.0.0',
 *   description: 'Rewards saying the secret word',
 *   turnMode: 'single',
 *   taskSource: 'generator',
 *   configSchema: z.object({ word: z.string().default('hello') }).strict(),
 *   create: (config) => ({
 *     tasks: { size: (split) => (split === 'train' ? null : 10), get: (_split, i) => ({ i }) },
 *     newEpisode: () => {
 *       let done = false;
 *       return {
 *         reset: () => [{ role: 'user', content: `Say ${config.word}.` }],
 *         step: (text) => {
 *           if (done) throw new EnvironmentError('ENV_STEP_AFTER_DONE', 'The episode is over');
 *           done = true;
 *           return { observation: '', reward: text.includes(config.word) ? 1 : 0, done: true, info: {} };
 *         },
 *         close: () => {},
 *       };
 *     },
 *   }),
 * });
 * ```
 */
export function defineEnvironment<Config, Task = JsonValue>(options: EnvironmentOptions<Config, Task>): Environment<Config, Task> {
  if (!ID_PATTERN.test(options.id)) {
    throw new EnvironmentError('ENV_INVALID_CONFIG', `Environment id ${JSON.stringify(options.id)} must match ${ID_PATTERN}`, 'id');
  }
  if (options.turnMode !== 'single' && options.turnMode !== 'multi') {
    throw new EnvironmentError('ENV_INVALID_CONFIG', `turnMode must be single or multi`, 'turnMode');
  }
  if (options.taskSource !== 'dataset' && options.taskSource !== 'generator') {
    throw new EnvironmentError('ENV_INVALID_CONFIG', `taskSource must be dataset or generator`, 'taskSource');
  }
  if (typeof options.create !== 'function') throw new EnvironmentError('ENV_INVALID_CONFIG', 'create must be a function', 'create');
  if (options.validateRow !== undefined && typeof options.validateRow !== 'function') {
    throw new EnvironmentError('ENV_INVALID_CONFIG', 'validateRow must be a function when given', 'validateRow');
  }
  for (const [key, p] of Object.entries(options.configPolicy ?? {})) {
    if (!isKeyPolicy(p)) throw new EnvironmentError('ENV_INVALID_CONFIG', `configPolicy.${key} is not a known policy`, `configPolicy.${key}`);
  }
  return Object.freeze({
    $$type: ENVIRONMENT_BRAND,
    apiVersion: API_VERSION,
    id: options.id,
    version: options.version,
    description: options.description,
    turnMode: options.turnMode,
    taskSource: options.taskSource,
    configSchema: options.configSchema,
    ...(options.configPolicy ? { configPolicy: Object.freeze({ ...options.configPolicy }) } : {}),
    create: options.create,
    ...(options.validateRow ? { validateRow: options.validateRow } : {}),
  });
}

function isKeyPolicy(p: unknown): p is ConfigKeyPolicy {
  if (p === null || typeof p !== 'object') return false;
  const v = p as { set?: unknown; split?: unknown; setting?: unknown; limit?: unknown };
  if (v.set === 'dataset') return v.split === 'train' || v.split === 'test';
  if (v.set === 'host') return (HOST_SETTINGS as readonly unknown[]).includes(v.setting);
  if (v.set === 'tenant') return true;
  return (HOST_LIMITS as readonly unknown[]).includes(v.limit);
}

/**
 * Whether a value is an environment definition (checked by brand, never `instanceof`). It does not
 * check {@link API_VERSION}: a host compares `apiVersion` itself to say why it refuses a definition.
 *
 * @example
 * ```ts
 * const mod = await import(entry);
 * const env = isEnvironment(mod.default) ? mod.default : null;
 * ```
 */
export function isEnvironment(value: unknown): value is Environment<unknown, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { $$type?: unknown }).$$type === ENVIRONMENT_BRAND &&
    typeof (value as { apiVersion?: unknown }).apiVersion === 'number' &&
    typeof (value as { create?: unknown }).create === 'function'
  );
}

/**
 * Checks one dataset row the way hosts do: `null` when usable, else the reason. A row must be a JSON
 * object; then the environment's {@link Environment.validateRow} decides, if it has one (a throw from it
 * is reported as the reason, never propagated).
 *
 * @example
 * ```ts
 * checkDatasetRow(math, { prompt: [{ role: 'user', content: '1+1?' }], reward_model: { ground_truth: '2' } }); // null
 * checkDatasetRow(math, [1, 2]); // 'not a JSON object'
 * ```
 */
export function checkDatasetRow(env: Pick<Environment<unknown, unknown>, 'validateRow'>, row: unknown): string | null {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return 'not a JSON object';
  if (!env.validateRow) return null;
  try {
    const reason = env.validateRow(row as JsonObject);
    return reason === null || reason === undefined ? null : String(reason);
  } catch (error) {
    return `row check failed: ${(error as Error)?.message ?? String(error)}`;
  }
}

/**
 * Validates a user's config against the environment's schema, filling defaults. Throws
 * `ENV_INVALID_CONFIG` naming the offending key.
 *
 * @example
 * ```ts
 * const config = parseConfig(env, { difficulty: 3 }); // every other key at its default
 * parseConfig(env, { dificulty: 3 }); // throws EnvironmentError ENV_INVALID_CONFIG, field 'config.dificulty'
 * ```
 */
export function parseConfig<Config>(env: Environment<Config, unknown>, raw: unknown): Config {
  const result = env.configSchema.safeParse(raw ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = [...issue.path.map(String), ...(issue.code === 'unrecognized_keys' ? [issue.keys[0]] : [])].join('.');
  const message = issue.code === 'unrecognized_keys' ? `Unknown config key ${path}` : `config.${path || '(root)'}: ${issue.message}`;
  throw new EnvironmentError('ENV_INVALID_CONFIG', message, path ? `config.${path}` : 'config');
}

/**
 * JSON Schema (draft 2020-12) of the environment's config, for OpenAPI and remote servers.
 *
 * @example
 * ```ts
 * configJsonSchema(env).properties; // { difficulty: { type: 'integer', default: 2, … }, … }
 * ```
 */
export function configJsonSchema(env: Environment<unknown, unknown>): Record<string, unknown> {
  return z.toJSONSchema(env.configSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}
