import { existsSync } from 'node:fs';
import type { z } from 'zod';
import { seedModelPath } from '../../hub/hub-ref';
import { findJobKind } from '../../jobs/kinds/job-kinds';
import { CliError, EXIT } from './cli-error';

/** The kinds `train` and `infer` submit. */
export type OverrideKind = 'train' | 'inference';

/** Where a seed (OpenTinker / verl) key lands in our spec. */
type SeedTarget = { path: string[] } | { special: 'url' | 'env_host' | 'env_port' | 'data' | 'val_data' };

const COMMON_SEED_KEYS: Record<string, SeedTarget> = {
  tokenizer_path: { path: ['model', 'path'] },
  model_path: { path: ['model', 'path'] },
  scheduler_url: { special: 'url' },
  'interaction.config.env_host': { special: 'env_host' },
  'interaction.config.env_port': { special: 'env_port' },
  batch_size: { path: ['batch_size'] },
};

/** The seed's command-line names, per kind, and what they mean in our job spec. */
export const SEED_KEYS: Record<OverrideKind, Record<string, SeedTarget>> = {
  train: {
    ...COMMON_SEED_KEYS,
    val_batch_size: { path: ['val_batch_size'] },
    num_epochs: { path: ['num_epochs'] },
    total_steps: { path: ['total_steps'] },
    save_freq: { path: ['save_freq'] },
    test_freq: { path: ['test_freq'] },
    data_path: { special: 'data' },
    val_data_path: { special: 'val_data' },
    adv_estimator: { path: ['algorithm', 'adv_estimator'] },
    rollout_n: { path: ['algorithm', 'rollout_n'] },
    kl_loss_coef: { path: ['algorithm', 'kl_loss_coef'] },
    lr: { path: ['optim', 'lr'] },
  },
  inference: {
    ...COMMON_SEED_KEYS,
    // An inference job runs on one split (test by default): the seed's data files both name it.
    data_path: { special: 'val_data' },
    val_data_path: { special: 'val_data' },
    val_batch_size: { path: ['num_tasks'] },
  },
};

/** The command that submits each kind, and the spec paths its usage errors give as examples. */
const COMMANDS: Record<OverrideKind, { command: string; examplePaths: string }> = {
  train: { command: 'train', examplePaths: 'algorithm.clip_ratio or environment.config.difficulty' },
  inference: { command: 'infer', examplePaths: 'num_tasks or environment.config.difficulty' },
};

/** What the overrides produce: the spec to submit, and the server to submit it to when a token named one. */
export interface OverrideResult {
  spec: Record<string, unknown>;
  url?: string;
  /**
   * Local data files (`data_path=train.parquet`) the command uploads as datasets before it submits, each
   * to become `environment.dataset` or `val_dataset`: the server never opens a path a client names.
   */
  uploads: Array<{ key: 'dataset' | 'val_dataset'; path: string; token: string }>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Builds a `train` or `inference` job spec from the environment id, an optional base spec (from
 * `--config`) and `key=value` tokens. Keys are the seed's names (`batch_size`, `data_path`,
 * `model_path`, `interaction.config.env_host`, …; see {@link SEED_KEYS}) or any dotted path of our spec
 * (`algorithm.clip_ratio`, `environment.config.difficulty`). Values are JSON when they parse as JSON,
 * else strings. A malformed token, an unknown key, or two tokens that disagree → a usage error naming
 * the token (nothing is sent). Values themselves are checked by the server.
 *
 * @example
 * ```ts
 * buildJobSpec('train', 'math', ['model_path=/models/qwen', 'batch_size=16', 'algorithm.clip_ratio=0.28']);
 * // { spec: { kind: 'train', environment: { id: 'math' }, model: { path: '/models/qwen' }, batch_size: 16, algorithm: { clip_ratio: 0.28 } } }
 * ```
 */
export function buildJobSpec(kind: OverrideKind, env: string | undefined, tokens: readonly string[], base: Record<string, unknown> = {}): OverrideResult {
  if (base.kind !== undefined && base.kind !== kind) {
    throw new CliError(`--config holds a ${JSON.stringify(base.kind)} job; this command submits ${kind} jobs`, EXIT.USAGE, undefined, '--config');
  }
  const spec: Record<string, unknown> = structuredClone({ ...base, kind });
  const setBy = new Map<string, { token: string; value: unknown }>();
  const set = (path: string[], value: unknown, token: string) => {
    const key = path.join('.');
    const earlier = setBy.get(key);
    if (earlier && JSON.stringify(earlier.value) !== JSON.stringify(value)) {
      throw new CliError(`"${token}" contradicts "${earlier.token}" (both set ${key})`, EXIT.USAGE, undefined, key);
    }
    setBy.set(key, { token, value });
    // A model named on the command line replaces the one in --config, whichever way either names it.
    const other = key === 'model.path' ? 'preset' : key === 'model.preset' ? 'path' : undefined;
    if (other) {
      const rival = setBy.get(`model.${other}`);
      if (rival) throw new CliError(`"${token}" contradicts "${rival.token}" (a job has one model)`, EXIT.USAGE, undefined, 'model');
      if (spec.model && typeof spec.model === 'object') delete (spec.model as Record<string, unknown>)[other];
    }
    setPath(spec, path, value, token);
  };

  let url: string | undefined;
  const uploads: OverrideResult['uploads'] = [];
  let envHost: { value: string; token: string } | undefined;
  let envPort: { value: string; token: string } | undefined;
  const seed = SEED_KEYS[kind];
  const schema = findJobKind(kind)!.schema;

  for (const token of tokens) {
    const eq = token.indexOf('=');
    if (eq <= 0) {
      throw new CliError(`Malformed override "${token}": expected key=value (e.g. batch_size=16 or algorithm.clip_ratio=0.28)`, EXIT.USAGE);
    }
    const key = token.slice(0, eq).trim();
    const raw = token.slice(eq + 1);
    const value = parseValue(raw);
    const target = seed[key];
    if (target && 'special' in target) {
      switch (target.special) {
        case 'url':
          url = raw;
          break;
        case 'env_host':
          envHost = { value: raw, token };
          break;
        case 'env_port':
          envPort = { value: raw, token };
          break;
        case 'data':
        case 'val_data': {
          // An uploaded dataset's id, or a file here that the command uploads first.
          const key = target.special === 'data' ? 'dataset' : 'val_dataset';
          if (UUID.test(raw)) set(['environment', key], raw, token);
          else uploads.push({ key, path: raw, token });
          break;
        }
      }
      continue;
    }
    const path = target ? target.path : key.split('.');
    if (path.some((p) => p === '') || !knownPath(schema, path)) {
      throw new CliError(
        `Unknown key "${key}" in "${token}": use one of the seed's names (${Object.keys(seed).join(', ')}) or a path of the ${kind} spec such as ${COMMANDS[kind].examplePaths}`,
        EXIT.USAGE,
        undefined,
        key,
      );
    }
    set(path, target && path.join('.') === 'model.path' ? seedModelPath(value, existsSync) : value, token);
  }

  if (envHost || envPort) {
    if (!envHost || !envPort) {
      const given = (envHost ?? envPort)!.token;
      throw new CliError(`"${given}" needs ${envHost ? 'interaction.config.env_port' : 'interaction.config.env_host'} too (a remote environment server's host and port)`, EXIT.USAGE);
    }
    const port = Number(envPort.value);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new CliError(`"${envPort.token}": the port must be a whole number from 1 to 65535`, EXIT.USAGE);
    const host = envHost.value.replace(/\/+$/, '');
    const withScheme = /^https?:\/\//.test(host) ? host : `http://${host}`;
    set(['environment', 'url'], `${withScheme}:${port}`, `${envHost.token} ${envPort.token}`);
  }

  if (env !== undefined) setPath(spec, ['environment', 'id'], env, env);
  const environment = spec.environment as Record<string, unknown> | undefined;
  if (typeof environment?.id !== 'string') {
    throw new CliError(`Name the environment: opentinker ${COMMANDS[kind].command} <env> (e.g. math), or environment.id in --config`, EXIT.USAGE);
  }
  const model = spec.model as Record<string, unknown> | undefined;
  if (model?.preset === undefined && model?.path === undefined) {
    throw new CliError('Name the model: model_path=<Org/Name or hf:Org/Name (a Hugging Face repo), a model folder on the worker, or job:<id>> or model.preset=tiny-char', EXIT.USAGE, undefined, 'model');
  }
  return { spec, url, uploads };
}

/** JSON when it parses (`16`, `true`, `[1,2]`, `{"a":1}`, `"x"`), else the text itself. */
export function parseValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown, token: string): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (next === undefined) node[part] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new CliError(`"${token}" sets a key inside ${part}, which is ${JSON.stringify(next)}`, EXIT.USAGE);
    }
    node = node[part] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

/** Whether a dotted path names a key of the schema (any key below a free-form record, such as environment.config). */
function knownPath(schema: z.ZodType, path: string[]): boolean {
  let node = unwrap(schema);
  for (const part of path) {
    const def = node._zod.def as { type: string; shape?: Record<string, z.ZodType> };
    if (def.type === 'record' || def.type === 'unknown' || def.type === 'any') return true;
    if (def.type !== 'object' || !def.shape || !Object.hasOwn(def.shape, part)) return false;
    node = unwrap(def.shape[part]);
  }
  return true;
}

/** The schema under defaults, optionals and pipes. */
function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema;
  for (;;) {
    const def = node._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if (def.innerType && ['default', 'optional', 'nullable', 'prefault', 'readonly', 'catch'].includes(def.type)) node = def.innerType;
    else if (def.type === 'pipe' && def.in) node = def.in;
    else return node;
  }
}
