import type { Environment, HostConfigInput } from '@opentinker/env-sdk';
import Fastify, { FastifyInstance } from 'fastify';
import { EpisodeStore } from './episode-store';
import { envProtocolRoutes } from './env-protocol.routes';

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
  log?: (message: string) => void;
}

/** A standalone environment server for one environment: what `opentinker env serve` runs. */
export async function createEnvServer(env: Environment<unknown, unknown>, options: EnvServerOptions = {}): Promise<{ app: FastifyInstance; store: EpisodeStore }> {
  const store = new EpisodeStore(env, {
    config: options.config ?? {},
    host: options.host,
    idleMs: (options.idleSeconds ?? 600) * 1000,
    callTimeoutMs: (options.callTimeoutSeconds ?? 30) * 1000,
    maxEpisodes: options.maxEpisodes ?? 4096,
    log: options.log,
  });
  // Unknown keys are refused (Fastify's default would silently drop them).
  const app = Fastify({ bodyLimit: options.bodyLimitBytes ?? 2 * 1024 * 1024, logger: false, ajv: { customOptions: { removeAdditional: false } } });
  await app.register(envProtocolRoutes, { store, token: options.token });
  app.addHook('onClose', async () => store.shutdown());
  await app.ready();
  return { app, store };
}
