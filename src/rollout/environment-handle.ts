import { isEnvironmentError, OpenTinkerEnvironment, RemoteEnvironment, shardUrls } from '@opentinker/env-sdk';
import type { EnvironmentInstance, JsonObject, TurnMode } from '@opentinker/env-sdk';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { datasetFile } from './dataset-files';
import { asJobError, datasetFiles, refuseDatasetsOfRemote, tenantEnvironmentConfig, unknownEnvironment } from './environment-checks';
import type { EnvironmentSpec } from './rl-spec';
import { loadRegistry } from '../registry/registry-loader';
import { egressFetch } from '../egress/egress-fetch';
import { checkRemoteUrl, ENVIRONMENT_URL } from '../egress/egress-policy';
import type { RunnerPaths } from '../runner/run-context';
import type { RunnerPolicy } from '../runner/runner-protocol';

/** An environment made ready for a job: its instance, what it is, and how to free it. */
export interface EnvironmentHandle {
  env: EnvironmentInstance;
  meta: { id: string; turnMode: TurnMode; version: string };
  /** Frees the instance (sandboxes, datasets, a remote server's episodes). Idempotent. */
  close(): Promise<void>;
}

export interface OpenEnvironmentContext {
  paths: RunnerPaths;
  /** The operator's limits: sandbox ceilings, reachable environment servers. */
  policy: RunnerPolicy;
  /** The job's folder; the environment gets `<workDir>/env` for scratch files. */
  workDir: string;
  log(line: string): void;
  /** Per-call timeout of a remote environment (default 30 s). */
  timeoutMs?: number;
  /** The job's id: OpenTinker game servers keep their statistics per `job_id`. */
  jobId?: string;
}

/**
 * Opens the environment a spec names: the installed plugin `id` in-process (discovered the way the
 * server discovers them, without Nest), or the server at `url`. A local config is validated by the
 * environment's own schema after the operator's policy (`resolveTenantConfig`: no host-only keys, values
 * within the sandbox ceilings); a remote server validates the config sent with each episode (its task
 * list is the one of its own config). `dataset` / `val_dataset` ids become the config keys the environment
 * marks as its train and test dataset files.
 * The spec checks are those the API ran at submission (`environment-checks.ts`), run again here where the
 * files are opened. Errors name the spec field at fault (`environment.id: …`, `environment.config.<key>: …`).
 */
export async function openEnvironment(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  try {
    return spec.url !== undefined ? await openRemote(spec, ctx) : await openLocal(spec, ctx);
  } catch (error) {
    throw asJobError(error);
  }
}

async function openLocal(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  const records = await loadRegistry({ hostRoot: ctx.paths.hostRoot, pluginsDir: ctx.paths.pluginsDir });
  const record = records.find((r) => r.id === spec.id && r.status === 'loaded' && r.environment);
  if (!record?.environment) {
    const failed = records.find((r) => r.id === spec.id);
    if (failed) throw new Error(`environment.id: environment ${spec.id} failed to load: ${failed.error}`);
    throw unknownEnvironment(
      spec.id ?? '',
      records.filter((r) => r.status === 'loaded').map((r) => r.id),
    );
  }
  const definition = record.environment;
  const datasets = datasetFiles(spec, definition, (id) => datasetFile(ctx.paths.datasetsDir, id));
  const config = tenantEnvironmentConfig(definition, spec.config, { ...ctx.policy.environmentHost, datasets });
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

async function openRemote(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  refuseDatasetsOfRemote(spec);
  if (spec.protocol === 'opentinker') return openOpenTinker(spec, ctx);
  let env: RemoteEnvironment;
  try {
    await checkRemoteUrl(spec.url!, ctx.policy.remoteEnvironments);
    env = await RemoteEnvironment.connect({
      url: spec.url!,
      token: spec.token,
      config: spec.config as JsonObject,
      timeoutMs: ctx.timeoutMs ?? 30_000,
      retries: 3,
      fetch: egressFetch(ctx.policy.remoteEnvironments, ENVIRONMENT_URL),
      // The URL is the tenant's: what failed at the transport level stays in this process, so a job's
      // error cannot map the server's network (open, closed or HTTP ports look the same).
      opaqueErrors: true,
      urlField: ENVIRONMENT_URL.field,
    });
  } catch (error) {
    throw new Error(namingUrl((error as Error).message));
  }
  if (env.info.id !== spec.id) {
    throw new Error(`environment.id: the server at ${spec.url} serves environment ${env.info.id}, not ${spec.id}`);
  }
  ctx.log(`environment: ${env.info.id} ${env.info.version} at ${spec.url} (${env.info.turn_mode}-turn)`);
  return { env, meta: { id: env.info.id, turnMode: env.info.turn_mode, version: env.info.version }, close: closer(env) };
}

/**
 * An OpenTinker game server (or several shards of one): every shard URL passes the same policy as any
 * tenant URL, before any connection and again on each connection (egressFetch); its errors stay opaque
 * below the protocol, like our own protocol's.
 */
async function openOpenTinker(spec: EnvironmentSpec, ctx: OpenEnvironmentContext): Promise<EnvironmentHandle> {
  const id = spec.id ?? 'opentinker';
  let env: OpenTinkerEnvironment;
  try {
    const urls = shardUrls(spec.url!, spec.shards ?? 1);
    for (const url of urls) await checkRemoteUrl(url, ctx.policy.remoteEnvironments);
    env = await OpenTinkerEnvironment.connect({
      url: spec.url!,
      shards: spec.shards ?? 1,
      token: spec.token,
      jobId: ctx.jobId,
      envKwargs: spec.config as JsonObject,
      tasks: spec.tasks as { train?: JsonObject[]; test?: JsonObject[] } | undefined,
      timeoutMs: ctx.timeoutMs ?? 30_000,
      retries: 3,
      fetch: egressFetch(ctx.policy.remoteEnvironments, ENVIRONMENT_URL),
      opaqueErrors: true,
      urlField: ENVIRONMENT_URL.field,
    });
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(isEnvironmentError(error) && error.field === 'shards' ? `environment.shards: ${message}` : namingUrl(message));
  }
  const shards = env.urls.length > 1 ? ` (${env.urls.length} shards, ports ${new URL(env.urls[0]).port}-${new URL(env.urls[env.urls.length - 1]).port})` : '';
  ctx.log(`environment: ${id} at ${spec.url}${shards}, OpenTinker game-server protocol (multi-turn)`);
  return { env, meta: { id, turnMode: 'multi', version: 'opentinker' }, close: closer(env) };
}

/** A remote environment's error, naming `environment.url` once (the client names it in errors about the address). */
function namingUrl(message: string): string {
  const prefix = `${ENVIRONMENT_URL.field}: `;
  return message.startsWith(prefix) ? message : prefix + message;
}

function closer(env: EnvironmentInstance): () => Promise<void> {
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    await env.close?.();
  };
}
