import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { seedModelPath as hubModelPath } from '../../hub/hub-ref';
import { findJobKind } from '../../kinds/job-kinds';
import { CliError, EXIT } from './cli-error';

/** The kinds `train` and `infer` submit. */
export type OverrideKind = 'train' | 'inference';

/**
 * Where a seed (OpenTinker / verl) key lands: a path of our spec (optionally with its value
 * translated), a special rule, accepted with no effect here (`ignore`: why, printed as a note), or
 * refused (`refuse`: what to use instead).
 */
export type SeedTarget = { path: string[]; value?: (value: unknown, token: string) => unknown } | { special: SeedSpecial } | { ignore: string } | { refuse: string };

type SeedSpecial =
  | 'url'
  | 'api_key'
  | 'env_host'
  | 'env_port'
  | 'env_endpoint'
  | 'env_shards'
  | 'data'
  | 'val_data'
  | 'output'
  | 'model'
  | 'tokenizer'
  | 'max_new_tokens'
  | 'algorithm'
  | 'lora_rank';

/** The linear layers of the engine's transformers (`@opentinker/engine` LORA_TARGETS): PEFT's "all-linear". */
const ALL_LINEAR = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

const VLLM = 'the engine here is not vLLM: it sizes itself (no tensor parallelism, no GPU memory fraction)';
const LOGGING = 'metrics go to the API and dashboard here (opentinker jobs metrics <id>, opentinker dashboard)';
const CONTEXT = "an episode is bounded by the model's context (config.json max_position_embeddings) and rollout.max_response_tokens";

const COMMON_SEED_KEYS: Record<string, SeedTarget> = {
  model_path: { special: 'model' },
  tokenizer_path: { special: 'tokenizer' },
  scheduler_url: { special: 'url' },
  server_url: { special: 'url' },
  scheduler_api_key: { special: 'api_key' },
  'interaction.config.env_host': { special: 'env_host' },
  'interaction.config.env_port': { special: 'env_port' },
  'interaction.config.env_endpoint': { special: 'env_endpoint' },
  'interaction.config.env_shards': { special: 'env_shards' },
  'interaction.config.max_steps': { ignore: "rollout.max_turns (the seed's multi_turn.max_assistant_turns) bounds an episode's turns here" },
  'interaction.config.max_total_steps': { ignore: "rollout.max_turns (the seed's multi_turn.max_assistant_turns) bounds an episode's turns here" },
  'interaction.config.observation_template': { ignore: "the game server's observation is the user message as it is" },
  'interaction.config.bind_worker_to_endpoint': { ignore: 'each episode picks its shard by crc32 of its instance id, as the seed routes unbound workers' },
  'interaction.name': { path: ['environment', 'id'] },
  'interaction.class_path': { ignore: "a game server given by env_host/env_port or env_endpoint is driven over OpenTinker's protocol (GymEnvironmentInteraction's calls)" },
  batch_size: { path: ['batch_size'] },
  temperature: { path: ['rollout', 'temperature'] },
  top_p: { path: ['rollout', 'top_p'] },
  max_new_tokens: { special: 'max_new_tokens' },
  max_tokens_per_turn: { path: ['rollout', 'max_new_tokens'] },
  'multi_turn.max_tokens_per_turn': { path: ['rollout', 'max_new_tokens'] },
  'multi_turn.max_assistant_turns': { path: ['rollout', 'max_turns'] },
  'multi_turn.max_user_turns': { ignore: 'the environment answers every model turn; rollout.max_turns bounds both' },
  'multi_turn.weave_project': { ignore: LOGGING },
  'multi_turn.experiment_name': { ignore: LOGGING },
  max_prompt_tokens: { ignore: CONTEXT },
  max_model_len: { ignore: CONTEXT },
  max_context_length: { ignore: CONTEXT },
  num_gpus: { path: ['resources', 'gpus'] },
  tensor_parallel_size: { ignore: VLLM },
  gpu_memory_utilization: { ignore: VLLM },
  trust_remote_code: { ignore: 'no model code is ever run: models load from safetensors and config.json' },
  vllm_server_url: { refuse: 'serve a model with `opentinker serve` and name it with model_path (a model folder, hf:Org/Name or job:<id>)' },
  processor_path: { refuse: 'vision-language models are not supported here; use a text model (model_path)' },
  num_workers: { ignore: 'data loading needs no worker processes here' },
  agent_num_workers: { path: ['rollout', 'env_concurrency'] },
  experiment_name: { path: ['name'] },
  project_name: { ignore: LOGGING },
  logger_backends: { ignore: LOGGING },
  enable_tracing: { ignore: LOGGING },
  weave_project: { ignore: LOGGING },
  wandb_key: { ignore: LOGGING },
  board_size: { path: ['environment', 'config', 'board_size'] },
  'reward.type': {
    refuse: 'rewards come from the environment: write one with @opentinker/env-sdk, or serve your reward as an OpenTinker game server (interaction.config.env_host/env_port)',
  },
};
for (const key of ['reward.code.code_function', 'reward.remote.auto_start', 'reward.remote.remote_api_key', 'reward.remote.reward_ip', 'reward.remote.reward_port']) {
  COMMON_SEED_KEYS[key] = COMMON_SEED_KEYS['reward.type'];
}

/** The seed's command-line and client-config names, per kind, and what they mean in our job spec. */
export const SEED_KEYS: Record<OverrideKind, Record<string, SeedTarget>> = {
  train: {
    ...COMMON_SEED_KEYS,
    // verl's trainer.logger / project_name (docs/metrics.md); the API and dashboard keep the metrics too.
    logger_backends: { path: ['trainer', 'logger'], value: (v) => (typeof v === 'string' ? v.split(',').map((l) => l.trim()) : v) },
    project_name: { path: ['trainer', 'project_name'], value: (v) => String(v) },
    // The seed's W&B key: the run streams to W&B with it (WANDB_API_KEY in the shell does the same).
    wandb_key: { path: ['trainer', 'wandb', 'api_key'], value: (v) => String(v) },
    val_batch_size: { path: ['val_batch_size'] },
    num_epochs: { path: ['num_epochs'] },
    num_steps: { path: ['total_steps'] },
    total_steps: { path: ['total_steps'] },
    save_freq: { path: ['save_freq'] },
    test_freq: { path: ['test_freq'] },
    data_path: { special: 'data' },
    val_data_path: { special: 'val_data' },
    algorithm: { special: 'algorithm' },
    adv_estimator: { path: ['algorithm', 'adv_estimator'] },
    rollout_n: { path: ['algorithm', 'rollout_n'] },
    kl_loss_coef: { path: ['algorithm', 'kl_loss_coef'] },
    lr: { path: ['optim', 'lr'] },
    'lora.lora_rank': { special: 'lora_rank' },
    'lora.lora_alpha': { path: ['model', 'lora', 'alpha'] },
    'lora.target_modules': {
      path: ['model', 'lora', 'target_modules'],
      value: (v) => (v === 'all-linear' ? ALL_LINEAR : typeof v === 'string' ? v.split(',').map((m) => m.trim()) : v),
    },
    'lora.lr': { path: ['optim', 'lr'] },
    'lora.exclude_modules': { refuse: 'list the modules to train in lora.target_modules (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)' },
    'lora.lora_adapter_path': { refuse: "continue from a job's adapters with model_path=job:<id> (or job:<id>/step-<n>)" },
  },
  inference: {
    ...COMMON_SEED_KEYS,
    // An inference job runs on one split (test by default): the seed's data files both name it.
    data_path: { special: 'val_data' },
    val_data_path: { special: 'val_data' },
    val_batch_size: { path: ['num_tasks'] },
    max_samples: { path: ['num_tasks'] },
    output_path: { special: 'output' },
    env_endpoint: { special: 'env_endpoint' },
  },
};

/** The command that submits each kind, and the spec paths its usage errors give as examples. */
const COMMANDS: Record<OverrideKind, { command: string; examplePaths: string }> = {
  train: { command: 'train', examplePaths: 'algorithm.clip_ratio or environment.config.difficulty' },
  inference: { command: 'infer', examplePaths: 'num_tasks or environment.config.difficulty' },
};

/** What the overrides produce: the spec to submit, and what the command does around submitting it. */
export interface OverrideResult {
  spec: Record<string, unknown>;
  /** The server, when scheduler_url (or server_url) named one on the command line. */
  url?: string;
  /** The API key, when scheduler_api_key gave one on the command line. */
  apiKey?: string;
  /**
   * scheduler_url / scheduler_api_key of a seed client config (--config): they count only where nothing
   * else names a server or a key (`connectionWithConfig`), since configs are copied between people (the
   * seed's ship with an example key) while a login is the user's own.
   */
  configConnection: { url?: string; apiKey?: string };
  /**
   * Local data files (`data_path=train.parquet`) the command reads before it submits: uploaded as
   * datasets (`environment.dataset` / `val_dataset`), or, for an OpenTinker game server, sent as the
   * split's tasks. The server never opens a path a client names.
   */
  uploads: Array<{ key: 'dataset' | 'val_dataset'; path: string; token: string }>;
  /** Where the command writes the job's results.jsonl when it ends (the seed's output_path). */
  outputPath?: string;
  /** Keys accepted with no effect here, and why: the command prints them. */
  notes: string[];
}

/** One key=value, from the command line or from a seed client config given as --config. */
interface Entry {
  key: string;
  raw: string;
  value: unknown;
  token: string;
  fromConfig: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Keys only the seed's client configs have at their top level: a --config holding one is a seed config. */
const SEED_CONFIG_MARKERS = [
  'tokenizer_path',
  'model_path',
  'scheduler_url',
  'interaction',
  'multi_turn',
  'data_path',
  'num_steps',
  'logger_backends',
  'output_path',
  'max_samples',
];

/** Whether a --config file is one of the seed's client configs (math_param.yaml, …) rather than a job spec. */
export function isSeedConfig(config: Record<string, unknown>): boolean {
  return config.kind === undefined && SEED_CONFIG_MARKERS.some((key) => Object.hasOwn(config, key));
}

/**
 * A seed client config as key=value entries: leaves by dotted path, leaving out nulls (the seed's
 * "not set") and OmegaConf interpolations (`${interaction.config.env_host}`), which only repeat other keys.
 */
function seedConfigEntries(config: Record<string, unknown>, prefix = ''): Entry[] {
  const entries: Entry[] = [];
  for (const [name, value] of Object.entries(config)) {
    const key = prefix + name;
    if (value === null || value === undefined) continue;
    if (typeof value === 'string' && value.includes('${')) continue;
    if (typeof value === 'object' && !Array.isArray(value)) {
      entries.push(...seedConfigEntries(value as Record<string, unknown>, `${key}.`));
      continue;
    }
    const raw = typeof value === 'string' ? value : JSON.stringify(value);
    entries.push({ key, raw, value, token: `${key}: ${raw} (--config)`, fromConfig: true });
  }
  return entries;
}

/**
 * Builds a `train` or `inference` job spec from the environment id, an optional base (from `--config`:
 * a job spec, or one of the seed's client configs) and `key=value` tokens. Keys are the seed's names
 * (see {@link SEED_KEYS}; docs/seed-compatibility.md) or any dotted path of our spec
 * (`algorithm.clip_ratio`, `environment.config.difficulty`). Values are JSON when they parse as JSON,
 * else strings. The command line wins over --config; a malformed token, an unknown or refused key, or
 * two tokens that disagree → a usage error naming the token (nothing is sent). Values themselves are
 * checked by the server.
 *
 * @example
 * ```ts
 * buildJobSpec('train', 'math', ['model_path=/models/qwen', 'batch_size=16', 'algorithm.clip_ratio=0.28']);
 * // { spec: { kind: 'train', environment: { id: 'math' }, model: { path: '/models/qwen' }, batch_size: 16, algorithm: { clip_ratio: 0.28 } }, uploads: [], notes: [] }
 * ```
 */
export function buildJobSpec(
  kind: OverrideKind,
  env: string | undefined,
  tokens: readonly string[],
  base: Record<string, unknown> = {},
  folderExists: (path: string) => boolean = existsSync,
): OverrideResult {
  const seedConfig = isSeedConfig(base);
  if (!seedConfig && base.kind !== undefined && base.kind !== kind) {
    throw new CliError(`--config holds a ${JSON.stringify(base.kind)} job; this command submits ${kind} jobs`, EXIT.USAGE, undefined, '--config');
  }
  const spec: Record<string, unknown> = structuredClone({ ...(seedConfig ? {} : base), kind });
  const setBy = new Map<string, { token: string; value: unknown; fromConfig: boolean }>();
  const set = (path: string[], value: unknown, entry: Pick<Entry, 'token' | 'fromConfig'>) => {
    const key = path.join('.');
    const earlier = setBy.get(key);
    // The command line overrides a seed config; within one source two different values are a mistake.
    if (earlier && earlier.fromConfig === entry.fromConfig && JSON.stringify(earlier.value) !== JSON.stringify(value)) {
      throw new CliError(`"${entry.token}" contradicts "${earlier.token}" (both set ${key})`, EXIT.USAGE, undefined, key);
    }
    if (earlier && earlier.fromConfig && !entry.fromConfig) setBy.delete(key);
    if (earlier && !earlier.fromConfig && entry.fromConfig) return;
    setBy.set(key, { token: entry.token, value, fromConfig: entry.fromConfig });
    // A model named on the command line replaces the one in --config, whichever way either names it.
    const other = key === 'model.path' ? 'preset' : key === 'model.preset' ? 'path' : undefined;
    if (other) {
      const rival = setBy.get(`model.${other}`);
      if (rival && rival.fromConfig === entry.fromConfig) throw new CliError(`"${entry.token}" contradicts "${rival.token}" (a job has one model)`, EXIT.USAGE, undefined, 'model');
      if (rival) setBy.delete(`model.${other}`);
      if (spec.model && typeof spec.model === 'object') delete (spec.model as Record<string, unknown>)[other];
    }
    setPath(spec, path, value, entry.token);
  };

  const entries: Entry[] = seedConfig ? seedConfigEntries(base) : [];
  for (const token of tokens) {
    const eq = token.indexOf('=');
    if (eq <= 0) {
      throw new CliError(`Malformed override "${token}": expected key=value (e.g. batch_size=16 or algorithm.clip_ratio=0.28)`, EXIT.USAGE);
    }
    const raw = token.slice(eq + 1);
    entries.push({ key: token.slice(0, eq).trim(), raw, value: parseValue(raw), token, fromConfig: false });
  }

  // The specials' values, the command line's over a seed config's (entries come config first).
  const special = new Map<SeedSpecial, Entry>();
  const uploads = new Map<'dataset' | 'val_dataset', OverrideResult['uploads'][number] & { fromConfig: boolean }>();
  const notes: string[] = [];
  const seed = SEED_KEYS[kind];
  const schema = findJobKind(kind)!.schema;

  for (const entry of entries) {
    const { key, raw, value, token } = entry;
    // The game server's env kwargs (board_size, split, …) that the seed keeps beside env_host/env_port.
    const target: SeedTarget | undefined =
      seed[key] ??
      (key.startsWith('interaction.config.') && key.length > 'interaction.config.'.length
        ? { path: ['environment', 'config', key.slice('interaction.config.'.length)] }
        : undefined);
    if (target && 'refuse' in target) {
      throw new CliError(`"${token}": ${key} is not supported here; ${target.refuse}`, EXIT.USAGE, undefined, key);
    }
    if (target && 'ignore' in target) {
      notes.push(`${key} has no effect here: ${target.ignore}`);
      continue;
    }
    if (target && 'special' in target) {
      switch (target.special) {
        case 'data':
        case 'val_data': {
          // An uploaded dataset's id, or a file here that the command reads first.
          const field = target.special === 'data' ? 'dataset' : 'val_dataset';
          if (UUID.test(raw)) set(['environment', field], raw, entry);
          else {
            const earlier = uploads.get(field);
            if (earlier && earlier.fromConfig === entry.fromConfig && earlier.path !== raw) {
              throw new CliError(`"${token}" contradicts "${earlier.token}" (both name the ${field === 'dataset' ? 'train' : 'test'} data)`, EXIT.USAGE, undefined, key);
            }
            if (!earlier || earlier.fromConfig || !entry.fromConfig) uploads.set(field, { key: field, path: raw, token, fromConfig: entry.fromConfig });
          }
          break;
        }
        case 'algorithm':
          // The seed's `algorithm: agent_loop` names its rollout loop, the only one here; an object is ours.
          if (typeof value === 'object' && value !== null) set(['algorithm'], value, entry);
          else if (raw !== 'agent_loop') {
            throw new CliError(
              `"${token}": algorithm=${raw} is not supported here; rollouts always run the agent loop (the seed's agent_loop), and adv_estimator picks the RL algorithm`,
              EXIT.USAGE,
              undefined,
              key,
            );
          }
          break;
        case 'lora_rank':
          // 0 is the seed's "no LoRA".
          if (value !== 0) set(['model', 'lora', 'rank'], value, entry);
          break;
        default: {
          const earlier = special.get(target.special);
          if (earlier && earlier.fromConfig === entry.fromConfig && earlier.raw !== raw) {
            throw new CliError(`"${token}" contradicts "${earlier.token}"`, EXIT.USAGE, undefined, key);
          }
          if (!earlier || earlier.fromConfig || !entry.fromConfig) special.set(target.special, entry);
        }
      }
      continue;
    }
    const path = target ? target.path : key.split('.');
    if (!target && (path.some((p) => p === '') || !knownPath(schema, path))) {
      throw new CliError(
        `Unknown key "${key}" in "${token}": use one of the seed's names (${Object.keys(seed).join(', ')}) or a path of the ${kind} spec such as ${COMMANDS[kind].examplePaths}`,
        EXIT.USAGE,
        undefined,
        key,
      );
    }
    set(path, target?.value ? target.value(value, token) : value, entry);
  }

  // The model: model_path, else tokenizer_path (the seed loads both from one folder; here a model carries its tokenizer).
  const model = special.get('model');
  const tokenizer = special.get('tokenizer');
  const policy = model ?? tokenizer;
  if (policy) set(['model', 'path'], seedModelPath(policy, folderExists), policy);
  if (model && tokenizer && tokenizer.raw !== model.raw) notes.push(`tokenizer_path has no effect here: the model's own tokenizer is used (${model.token})`);

  // The seed's max_new_tokens is the whole response's budget; with no per-turn cap given it is one too.
  const budget = special.get('max_new_tokens');
  if (budget) {
    set(['rollout', 'max_response_tokens'], budget.value, budget);
    if (!setBy.has('rollout.max_new_tokens') && typeof budget.value === 'number') set(['rollout', 'max_new_tokens'], Math.min(budget.value, 32768), budget);
  }

  // An OpenTinker game server: env_host + env_port, or env_endpoint (a URL), with env_shards on consecutive ports.
  const host = special.get('env_host');
  const port = special.get('env_port');
  const endpoint = special.get('env_endpoint');
  const shards = special.get('env_shards');
  let gameServer: { url: string; entry: Entry } | undefined;
  if (host || port) {
    if (!host || !port) {
      throw new CliError(
        `"${(host ?? port)!.token}" needs ${host ? 'interaction.config.env_port' : 'interaction.config.env_host'} too (a remote environment server's host and port)`,
        EXIT.USAGE,
      );
    }
    const n = Number(port.raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new CliError(`"${port.token}": the port must be a whole number from 1 to 65535`, EXIT.USAGE);
    const bare = host.raw.replace(/\/+$/, '');
    gameServer = {
      url: `${/^https?:\/\//.test(bare) ? bare : `http://${bare}`}:${n}`,
      entry: { ...host, token: `${host.token} ${port.token}`, fromConfig: host.fromConfig && port.fromConfig },
    };
  }
  if (endpoint && (!gameServer || gameServer.entry.fromConfig || !endpoint.fromConfig)) {
    const url = endpoint.raw.replace(/\/+$/, '');
    if (gameServer && gameServer.entry.fromConfig === endpoint.fromConfig && gameServer.url !== url) {
      throw new CliError(`"${endpoint.token}" contradicts "${gameServer.entry.token}" (two game servers)`, EXIT.USAGE, undefined, endpoint.key);
    }
    gameServer = { url, entry: endpoint };
  }
  if (shards && !gameServer)
    throw new CliError(`"${shards.token}" needs the game server too: interaction.config.env_host and env_port, or env_endpoint`, EXIT.USAGE, undefined, shards.key);
  if (gameServer) {
    set(['environment', 'url'], gameServer.url, gameServer.entry);
    set(['environment', 'protocol'], 'opentinker', gameServer.entry);
    if (shards) set(['environment', 'shards'], shards.value, shards);
  }

  if (env !== undefined) setPath(spec, ['environment', 'id'], env, env);
  const environment = spec.environment as Record<string, unknown> | undefined;
  if (typeof environment?.id !== 'string' && environment?.protocol !== 'opentinker') {
    throw new CliError(`Name the environment: opentinker ${COMMANDS[kind].command} <env> (e.g. math), or environment.id in --config`, EXIT.USAGE);
  }
  const named = spec.model as Record<string, unknown> | undefined;
  if (named?.preset === undefined && named?.path === undefined) {
    throw new CliError(
      'Name the model: model_path=<Org/Name or hf:Org/Name (a Hugging Face repo), a model folder, or job:<id>> or model.preset=tiny-char',
      EXIT.USAGE,
      undefined,
      'model',
    );
  }
  const output = special.get('output')?.raw;
  const given = (name: SeedSpecial, config: boolean) => {
    const entry = special.get(name);
    return entry && entry.fromConfig === config ? entry.raw : undefined;
  };
  return {
    spec,
    url: given('url', false),
    apiKey: given('api_key', false),
    configConnection: { url: given('url', true), apiKey: given('api_key', true) },
    uploads: [...uploads.values()].map(({ key, path, token }) => ({ key, path, token })),
    outputPath: output,
    notes,
  };
}

/**
 * A seed model name as our model.path: a folder that exists where the command runs becomes its absolute
 * path (the seed resolves it there, not in the job's folder on the worker); a bare `Org/Name` that is not
 * a folder here becomes `hf:Org/Name`; anything else (job:<id>, hf:…, an absolute path) is kept.
 */
function seedModelPath(entry: Entry, folderExists: (path: string) => boolean): unknown {
  const { raw } = entry;
  if (!raw.includes(':') && folderExists(raw)) return resolve(raw);
  return hubModelPath(raw, () => false);
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
