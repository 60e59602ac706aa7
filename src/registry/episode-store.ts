import { EnvironmentError, isEnvironmentError, resolveTenantConfig } from '@opentinker/env-sdk';
import type { Environment, EnvironmentInstance, Episode, HostConfigInput, JsonObject, JsonValue, Message, Split, StepResult } from '@opentinker/env-sdk';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface EpisodeStoreOptions {
  /** The server's default config (raw; defaults are filled by the environment's schema). The operator's: trusted. */
  config: unknown;
  /** Sandbox ceilings and operator values applied to the config a caller sends with an episode. */
  host?: Pick<HostConfigInput, 'limits' | 'settings'>;
  /** Open episodes one owner may hold at once (default: no limit beyond `maxEpisodes`). */
  maxEpisodesPerOwner?: number;
  /** Episodes untouched this long are closed. */
  idleMs: number;
  /** Longest one environment call may take. */
  callTimeoutMs: number;
  /** Open episodes allowed at once. */
  maxEpisodes: number;
  workDir?: string;
  log?: (message: string) => void;
}

interface OpenEpisode {
  /** Who created it: only they may step or close it. */
  owner: string;
  episode: Episode<unknown>;
  lastUsed: number;
  busy: boolean;
}

/** Distinct configs kept alive at once; the least recently used instance is closed past this. */
const MAX_INSTANCES = 8;

/**
 * Open episodes of one environment, behind the HTTP protocol: instances per config (cached), episode
 * ids, idle expiry, a cap, and a timeout on every environment call. An episode whose call timed out is
 * closed, since its state is unknown.
 */
export class EpisodeStore {
  private readonly episodes = new Map<string, OpenEpisode>();
  private readonly instances = new Map<string, Promise<EnvironmentInstance<unknown>>>();
  private readonly sweeper: NodeJS.Timeout;
  readonly defaults: unknown;

  constructor(
    readonly env: Environment<unknown, unknown>,
    private readonly options: EpisodeStoreOptions,
  ) {
    this.defaults = resolveTenantConfig(env, {}, { ...options.host, base: (options.config ?? {}) as Record<string, unknown> });
    this.sweeper = setInterval(() => void this.expire(), Math.max(1000, Math.min(options.idleMs / 2, 30_000)));
    this.sweeper.unref();
  }

  get open(): number {
    return this.episodes.size;
  }

  /**
   * The instance for the default config with a caller's `overrides`, which the operator's policy applies
   * to (`resolveTenantConfig`: no host-only keys such as dataset paths, values within the ceilings).
   */
  instance(overrides?: JsonObject): Promise<EnvironmentInstance<unknown>> {
    const base = (this.options.config ?? {}) as Record<string, unknown>;
    const config = resolveTenantConfig(this.env, overrides ?? {}, { ...this.options.host, base });
    const key = JSON.stringify(config);
    let instance = this.instances.get(key);
    if (!instance) {
      const workDir = this.options.workDir ?? join(tmpdir(), `opentinker-env-${this.env.id}`);
      mkdirSync(workDir, { recursive: true });
      instance = Promise.resolve(this.env.create(config, { workDir, log: this.options.log ?? (() => undefined) }));
      instance.catch(() => this.instances.delete(key));
      this.instances.set(key, instance);
      if (this.instances.size > MAX_INSTANCES) {
        const [oldestKey, oldest] = this.instances.entries().next().value!;
        this.instances.delete(oldestKey);
        void oldest.then((i) => i.close?.()).catch(() => undefined);
      }
    } else {
      // Keep insertion order as recency order.
      this.instances.delete(key);
      this.instances.set(key, instance);
    }
    return instance;
  }

  async tasks(split: Split, offset: number, limit: number): Promise<{ total: number | null; tasks: unknown[] }> {
    const inst = await this.instance();
    const total = inst.tasks.size(split);
    const end = total === null ? offset + limit : Math.min(total, offset + limit);
    const tasks: unknown[] = [];
    for (let i = offset; i < end; i++) tasks.push(await this.timed('tasks.get', () => inst.tasks.get(split, i)));
    return { total, tasks };
  }

  /** Episodes `owner` holds open. */
  openBy(owner: string): number {
    let n = 0;
    for (const e of this.episodes.values()) if (e.owner === owner) n += 1;
    return n;
  }

  async create(
    req: { task?: JsonValue; split?: Split; index?: number; seed: number; config?: JsonObject },
    owner = '',
  ): Promise<{ id: string; messages: Message[]; task: unknown }> {
    const perOwner = this.options.maxEpisodesPerOwner;
    if (perOwner !== undefined && this.openBy(owner) >= perOwner) {
      await this.expire();
      if (this.openBy(owner) >= perOwner) {
        throw new EnvironmentError('ENV_CAPACITY', `You have ${perOwner} open episodes, the most allowed (operator setting max_episodes_per_user); close some or retry later`);
      }
    }
    if (this.episodes.size >= this.options.maxEpisodes) {
      await this.expire();
      if (this.episodes.size >= this.options.maxEpisodes) {
        throw new EnvironmentError('ENV_CAPACITY', `Too many open episodes (${this.options.maxEpisodes}); close some or retry later`);
      }
    }
    const inst = await this.instance(req.config);
    let task: unknown = req.task;
    if (task === undefined) {
      const split = req.split ?? 'train';
      const size = inst.tasks.size(split);
      const index = req.index ?? 0;
      if (size !== null && index >= size) throw new EnvironmentError('ENV_INVALID_TASK', `No ${split} task ${index} (the split has ${size})`, 'index');
      task = await this.timed('tasks.get', () => inst.tasks.get(split, index));
    }
    const episode = inst.newEpisode();
    const messages = await this.timed('reset', () => episode.reset(task, req.seed)).catch(async (error) => {
      await Promise.resolve(episode.close()).catch(() => undefined);
      throw error;
    });
    const id = randomUUID();
    this.episodes.set(id, { owner, episode, lastUsed: Date.now(), busy: false });
    return { id, messages, task };
  }

  /** Someone else's episode is "not found", like one that never existed, so ids cannot be probed. */
  private owned(id: string, owner: string): OpenEpisode | undefined {
    const open = this.episodes.get(id);
    return open && open.owner === owner ? open : undefined;
  }

  async step(id: string, action: string, owner = ''): Promise<StepResult> {
    const open = this.owned(id, owner);
    if (!open) throw new EnvironmentError('ENV_EPISODE_CLOSED', `Episode ${id} does not exist or has expired`, 'id');
    if (open.busy) throw new EnvironmentError('ENV_INVALID_TASK', `Episode ${id} is already handling a step`, 'id');
    open.busy = true;
    try {
      return await this.timed('step', () => open.episode.step(action));
    } catch (error) {
      if (!isEnvironmentError(error) || error.code === 'ENV_TIMEOUT') await this.close(id, owner);
      throw error;
    } finally {
      open.busy = false;
      open.lastUsed = Date.now();
    }
  }

  async close(id: string, owner = ''): Promise<boolean> {
    const open = this.owned(id, owner);
    if (!open) return false;
    this.episodes.delete(id);
    await Promise.resolve(open.episode.close()).catch(() => undefined);
    return true;
  }

  async shutdown(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.episodes].map(([id, e]) => this.close(id, e.owner)));
    for (const instance of this.instances.values()) await instance.then((i) => i.close?.()).catch(() => undefined);
    this.instances.clear();
  }

  private async expire(): Promise<void> {
    const cutoff = Date.now() - this.options.idleMs;
    for (const [id, open] of this.episodes) if (!open.busy && open.lastUsed < cutoff) await this.close(id, open.owner);
  }

  private async timed<T>(what: string, work: () => T | Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(work),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new EnvironmentError('ENV_TIMEOUT', `${this.env.id}: ${what} took longer than ${this.options.callTimeoutMs} ms`)),
            this.options.callTimeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
