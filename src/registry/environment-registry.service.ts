import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { configJsonSchema, parseConfig } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { EpisodeStore } from './episode-store';
import type { PluginRecord } from './plugin-loader';
import { loadRegistry, type RegistryPaths } from './registry-loader';

export const REGISTRY_PATHS = Symbol('RegistryPaths');

/**
 * The environments this server can run. Discovered and loaded once at boot: a broken first-party
 * package or a duplicate id stops the boot with a message naming the packages; a broken third-party
 * package is listed as failed with its reason and the server runs on.
 */
@Injectable()
export class EnvironmentRegistry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Environments');
  private records: PluginRecord[] = [];
  private readonly stores = new Map<string, EpisodeStore>();

  constructor(
    @Inject(REGISTRY_PATHS) private readonly paths: RegistryPaths,
    private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    this.records = await loadRegistry(this.paths);
    for (const r of this.records) {
      if (r.status === 'loaded') this.logger.log(`Environment ${r.id} from ${r.packageName}@${r.version} (${r.source})`);
      else this.logger.warn(`Environment package at ${r.dir} failed: ${r.error}`);
    }
  }

  list(): PluginRecord[] {
    return this.records;
  }

  /** A loaded environment by id; unknown and failed ids are 404 (the list says why one failed). */
  get(id: string): Environment<unknown, unknown> {
    const record = this.records.find((r) => r.id === id && r.status === 'loaded');
    if (!record?.environment) {
      const known = this.records.filter((r) => r.status === 'loaded').map((r) => r.id);
      throw new AppError(ErrorCode.NOT_FOUND, `Unknown environment ${id} (known: ${known.join(', ') || 'none'})`, { field: 'id' });
    }
    return record.environment;
  }

  record(id: string): PluginRecord {
    const record = this.records.find((r) => r.id === id);
    if (!record) throw AppError.notFound('Environment', id);
    return record;
  }

  /** Episodes of an environment under its default config, behind the protocol routes. Made on first use. */
  store(id: string): EpisodeStore {
    let store = this.stores.get(id);
    if (!store) {
      store = new EpisodeStore(this.get(id), {
        config: {},
        host: this.config.environmentHost,
        idleMs: 600_000,
        callTimeoutMs: 30_000,
        maxEpisodes: 4096,
        maxEpisodesPerOwner: this.config.values.max_episodes_per_user,
        log: (m) => this.logger.log(m),
      });
      this.stores.set(id, store);
    }
    return store;
  }

  /** Task counts under the default config, or why it cannot be instantiated on this host. */
  async taskCounts(id: string): Promise<{ tasks: { train: number | null; test: number | null } | null; tasks_error: string | null }> {
    try {
      const instance = await this.store(id).instance();
      return { tasks: { train: instance.tasks.size('train'), test: instance.tasks.size('test') }, tasks_error: null };
    } catch (error) {
      return { tasks: null, tasks_error: (error as Error).message };
    }
  }

  async onModuleDestroy(): Promise<void> {
    for (const store of this.stores.values()) await store.shutdown();
  }

  /** Details for the API: JSON Schema and defaults of the config. */
  describe(env: Environment<unknown, unknown>): { configSchema: Record<string, unknown>; defaults: unknown } {
    let defaults: unknown = null;
    try {
      defaults = parseConfig(env, {});
    } catch {
      defaults = null;
    }
    return { configSchema: configJsonSchema(env), defaults };
  }
}
