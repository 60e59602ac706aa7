import { DEFAULT_JSON_MAX_DEPTH, type Environment, type HostConfigInput } from '@opentinker/env-sdk';
import Fastify, { FastifyInstance } from 'fastify';
import { limitJsonDepth } from '../core/json-body';
import { EpisodeStore } from './episode-store';
import { envProtocolRoutes } from './env-protocol.routes';
import { OpenTinkerServerState, openTinkerProtocolRoutes } from './opentinker-protocol.routes';

export interface EnvServerOptions {
  /** The operator's default config (may set host-only keys such as dataset paths). */
  config?: unknown;
  /** Ceilings and operator values applied to the config each caller sends. */
  host?: Pick<HostConfigInput, 'limits' | 'settings'>;
  token?: string;
  idleSeconds?: number;
  callTimeoutSeconds?: number;
  maxEpisodes?: number;
  bodyLimitBytes?: number;
  /** Most objects and arrays a request body may nest (setting json_max_depth). */
  jsonMaxDepth?: number;
  log?: (message: string) => void;
}

/** A standalone environment server for one environment: what `opentinker env serve` runs. */
export async function createEnvServer(env: Environment<unknown, unknown>, options: EnvServerOptions = {}): Promise<{ app: FastifyInstance; store: EpisodeStore }> {
  const store = episodeStore(env, options);
  const app = fastify(options);
  await app.register(envProtocolRoutes, { store, token: options.token });
  app.addHook('onClose', async () => store.shutdown());
  await app.ready();
  return { app, store };
}

/**
 * The same environment in OpenTinker's game-server protocol (`opentinker env serve --protocol
 * opentinker`): one app per shard (OpenTinker's `--shards N` listens on N consecutive ports), all sharing
 * one episode store and one set of instances and statistics, so any shard answers for any instance.
 */
export async function createOpenTinkerEnvServer(
  env: Environment<unknown, unknown>,
  options: EnvServerOptions & { shards?: number } = {},
): Promise<{ apps: FastifyInstance[]; store: EpisodeStore; state: OpenTinkerServerState }> {
  const store = episodeStore(env, options);
  const state = new OpenTinkerServerState();
  const apps: FastifyInstance[] = [];
  for (let i = 0; i < (options.shards ?? 1); i++) {
    const app = fastify(options);
    await app.register(openTinkerProtocolRoutes, { store, state, token: options.token });
    // The store outlives any one shard: it shuts down with the first app.
    if (i === 0) app.addHook('onClose', async () => store.shutdown());
    await app.ready();
    apps.push(app);
  }
  return { apps, store, state };
}

function episodeStore(env: Environment<unknown, unknown>, options: EnvServerOptions): EpisodeStore {
  return new EpisodeStore(env, {
    config: options.config ?? {},
    host: options.host,
    idleMs: (options.idleSeconds ?? 600) * 1000,
    callTimeoutMs: (options.callTimeoutSeconds ?? 30) * 1000,
    maxEpisodes: options.maxEpisodes ?? 4096,
    log: options.log,
  });
}

function fastify(options: EnvServerOptions): FastifyInstance {
  const app = Fastify({ bodyLimit: options.bodyLimitBytes ?? 2 * 1024 * 1024, logger: false });
  limitJsonDepth(app, options.jsonMaxDepth ?? DEFAULT_JSON_MAX_DEPTH);
  return app;
}
