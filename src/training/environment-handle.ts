import { isEnvironmentError, parseConfig, RemoteEnvironment } from '@opentinker/env-sdk';
import type { EnvironmentInstance, JsonObject, TurnMode } from '@opentinker/env-sdk';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { datasetFile } from '../datasets/dataset-files';
import type { EnvironmentSpec } from '../jobs/kinds/rl-spec';
import { loadRegistry } from '../registry/registry-loader';
import type { RunnerPaths } from '../runner/runner-protocol';

/** An environment made ready for a job: its instance, what it is, and how to free it. */
export interface EnvironmentHandle {
  env: EnvironmentInstance;
  meta: { id: string; turnMode: TurnMode; version: string };
  /** Frees the instance (sandboxes, datasets, a remote server's episodes). Idempotent. */
  close(): Promise<void>;
}

export interface OpenEnvironmentContext {
  paths: RunnerPaths;
  /** The job's folder; the environment gets `<workDir>/env` for scratch files. */
  workDir: string;
  log(line: string): void;
  /** Per-call timeout of a remote environment (default 30 s). */
  timeoutMs?: number;
}

/** The config keys the math-style environments read their splits from. */
const DATASET_KEYS = { dataset: 'train_path', val_dataset: 'test_path' } as const;

/**
 * Opens the environment a spec names: the installed plugin `id` in-process (discovered the way the
 * server discovers them, without Nest), or the server at `url`. A local config is validated by the
 * environment's own schema (a remote server validates the config sent with each episode; its task
 * list is the one of its own config); `dataset` / `val_dataset` ids become `config.train_path` / `test_path`.
 * Errors name the spec field at fault (`environment.id`, `environment.config.<key>`, …).
 */
export async function openEnvironment(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  if (spec.url !== undefined) return openRemote(spec, ctx);
  const records = await loadRegistry({ hostRoot: ctx.paths.hostRoot, pluginsDir: ctx.paths.pluginsDir });
  const record = records.find((r) => r.id === spec.id && r.status === 'loaded' && r.environment);
  if (!record?.environment) {
    const failed = records.find((r) => r.id === spec.id);
    if (failed) throw new Error(`environment.id: environment ${spec.id} failed to load: ${failed.error}`);
    const known = records.filter((r) => r.status === 'loaded').map((r) => r.id);
    throw new Error(`environment.id: unknown environment ${spec.id} (known: ${known.join(', ') || 'none'})`);
  }
  const definition = record.environment;
  const raw: Record<string, unknown> = { ...spec.config, ...datasetPaths(spec, ctx.paths.datasetsDir) };
  let config: unknown;
  try {
    config = parseConfig(definition, raw);
  } catch (error) {
    const field = isEnvironmentError(error) && error.field ? `environment.${error.field}` : 'environment.config';
    throw new Error(`${field}: ${(error as Error).message}`);
  }
  const scratch = join(ctx.workDir, 'env');
  mkdirSync(scratch, { recursive: true });
  let env: EnvironmentInstance;
  try {
    env = (await definition.create(config, { workDir: scratch, log: (m) => ctx.log(`[env ${spec.id}] ${m}`) })) as EnvironmentInstance;
  } catch (error) {
    const field = isEnvironmentError(error) && error.field ? `environment.${error.field.startsWith('config') ? error.field : `config.${error.field}`}` : 'environment';
    throw new Error(`${field}: environment ${spec.id} could not start: ${(error as Error).message}`);
  }
  ctx.log(`environment: ${spec.id} ${definition.version} (${record.packageName}, ${definition.turnMode}-turn)`);
  return { env, meta: { id: definition.id, turnMode: definition.turnMode, version: definition.version }, close: closer(env) };
}

function datasetPaths(spec: EnvironmentSpec, datasetsDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [specKey, configKey] of Object.entries(DATASET_KEYS) as Array<[keyof typeof DATASET_KEYS, string]>) {
    const id = spec[specKey];
    if (id === undefined) continue;
    if (spec.config[configKey] !== undefined) {
      throw new Error(`environment.${specKey}: give either environment.${specKey} or environment.config.${configKey}, not both`);
    }
    try {
      out[configKey] = datasetFile(datasetsDir, id);
    } catch (error) {
      throw new Error(`environment.${specKey}: ${(error as Error).message}`);
    }
  }
  return out;
}

async function openRemote(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  for (const key of Object.keys(DATASET_KEYS) as Array<keyof typeof DATASET_KEYS>) {
    if (spec[key] !== undefined) throw new Error(`environment.${key}: uploaded datasets live on this server; a remote environment (environment.url) cannot read them`);
  }
  let env: RemoteEnvironment;
  try {
    env = await RemoteEnvironment.connect({
      url: spec.url!,
      token: spec.token,
      config: spec.config as JsonObject,
      timeoutMs: ctx.timeoutMs ?? 30_000,
      retries: 3,
    });
  } catch (error) {
    throw new Error(`environment.url: ${(error as Error).message}`);
  }
  if (env.info.id !== spec.id) {
    throw new Error(`environment.id: the server at ${spec.url} serves environment ${env.info.id}, not ${spec.id}`);
  }
  ctx.log(`environment: ${env.info.id} ${env.info.version} at ${spec.url} (${env.info.turn_mode}-turn)`);
  return { env, meta: { id: env.info.id, turnMode: env.info.turn_mode, version: env.info.version }, close: closer(env) };
}

function closer(env: EnvironmentInstance): () => Promise<void> {
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    await env.close?.();
  };
}
