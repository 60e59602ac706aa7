import type { z } from 'zod';
import type { Episode, EnvironmentInstance, Split, StepResult, TaskSet } from './environment';
import { EnvironmentError } from './errors';
import { call } from './http-call';
import type { JsonObject, JsonValue, Message } from './messages';
import { CreateEpisodeResponse, InfoResponse, parseAnswer, PROTOCOL_VERSION, StepResponse, TasksResponse } from './protocol';

/** How {@link RemoteEnvironment.connect} reaches an environment server. */
export interface RemoteEnvironmentOptions {
  /** Base URL of the environment server, e.g. `http://127.0.0.1:8088`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when the server requires one. */
  token?: string;
  /** Config overrides sent with every new episode. */
  config?: JsonObject;
  /** Per-call timeout; a call that runs out fails with `ENV_TIMEOUT` and is not sent again. Default 30 s. */
  timeoutMs?: number;
  /**
   * Attempts per call (with exponential backoff). Every call is retried when it could not connect
   * (refused, DNS failure, connect timeout); GETs and DELETEs also on a lost connection or a 5xx. A POST
   * (new episode, step) that may have reached the server is never sent twice. Default 5.
   */
  retries?: number;
  /** First backoff delay; doubles each attempt. Default 200 ms. */
  backoffMs?: number;
  /** The `fetch` to use (default: the global one), e.g. one with a proxy agent. */
  fetch?: typeof fetch;
  /**
   * Errors say only "unreachable" or "not the environment protocol" for transport failures and answers
   * that are not protocol errors: no connection error codes, HTTP statuses or echoed bodies. For hosts
   * that connect to URLs typed by someone else, so errors cannot map the host's network. Default false.
   */
  opaqueErrors?: boolean;
  /** What the caller's config calls the url (e.g. `environment.url`): errors about the address itself (a redirect) name it. */
  urlField?: string;
}

/**
 * An environment served over the HTTP protocol, used exactly like a local one: it implements
 * {@link EnvironmentInstance}. Calls that cannot connect are retried with backoff; when the server
 * stays unreachable the call fails with `ENV_UNAVAILABLE` naming the URL. A step whose connection is
 * lost after it was sent is not retried (the server may have applied it): it fails with
 * `ENV_UNAVAILABLE`, and the episode should be abandoned. Errors the server reports keep their code
 * (`ENV_EPISODE_CLOSED`, `ENV_CAPACITY`, …); a call that runs out of time fails with `ENV_TIMEOUT`. Every
 * answer is checked with the protocol's schema (`protocol.ts`): one that does not fit is
 * `ENV_UNAVAILABLE` naming the field, not a failure later in whatever reads it.
 *
 * @example
 * ```ts
 * const env = await RemoteEnvironment.connect({ url: 'http://127.0.0.1:8088' });
 * const episode = env.newEpisode();
 * const messages = await episode.reset(await env.tasks.get('train', 0), 1);
 * const result = await episode.step('<move>4,4</move>');
 * await episode.close();
 * ```
 */
export class RemoteEnvironment implements EnvironmentInstance<JsonValue> {
  readonly tasks: TaskSet<JsonValue>;
  private readonly taskCache = new Map<string, JsonValue>();

  private constructor(
    private readonly options: Required<Omit<RemoteEnvironmentOptions, 'token' | 'config' | 'urlField'>> & Pick<RemoteEnvironmentOptions, 'token' | 'config' | 'urlField'>,
    /** What the server said about itself at connect time (`GET /v1/info`). */
    readonly info: InfoResponse,
  ) {
    this.tasks = {
      size: (split: Split) => info.tasks[split],
      get: (split: Split, index: number) => this.task(split, index),
    };
  }

  /** Connects and reads `/v1/info`; fails if the server speaks another protocol version. */
  static async connect(options: RemoteEnvironmentOptions): Promise<RemoteEnvironment> {
    const full = {
      timeoutMs: 30_000,
      retries: 5,
      backoffMs: 200,
      fetch: globalThis.fetch,
      opaqueErrors: false,
      ...options,
      url: options.url.replace(/\/+$/, ''),
    };
    const answer = await call<unknown>(full, 'GET', '/v1/info');
    // The version first: another version's info may not fit this one's schema.
    const version = (answer as { protocol_version?: unknown } | null)?.protocol_version;
    if (version !== PROTOCOL_VERSION) {
      throw new EnvironmentError('ENV_UNAVAILABLE', `${full.url} speaks protocol ${String(version)}; this client speaks ${PROTOCOL_VERSION}`);
    }
    const info = parseAnswer(InfoResponse, answer, `GET ${full.url}/v1/info`);
    return new RemoteEnvironment(full, info);
  }

  /**
   * A new episode on the server. `reset` creates it there (`POST /v1/episodes`, replacing the previous
   * one of this handle), `step` sends one action, `close` deletes it (idempotent, never throws).
   */
  newEpisode(): Episode<JsonValue> {
    let id: string | null = null;
    let closed = false;
    return {
      reset: async (task: JsonValue, seed: number): Promise<Message[]> => {
        if (id) await this.delete(id);
        const res = await this.call(CreateEpisodeResponse, 'POST', '/v1/episodes', { task, seed, config: this.options.config });
        id = res.episode_id;
        return res.messages;
      },
      step: async (action: string): Promise<StepResult> => {
        if (!id) throw new EnvironmentError('ENV_NOT_RESET', 'Call reset() before step()');
        const res = await this.call(StepResponse, 'POST', `/v1/episodes/${encodeURIComponent(id)}/step`, { action });
        return { observation: res.observation, observationRole: res.observation_role, reward: res.reward, done: res.done, info: res.info };
      },
      close: async () => {
        if (closed) return;
        closed = true;
        if (id) await this.delete(id);
      },
    };
  }

  /** One call whose answer `schema` checks. */
  private async call<S extends z.ZodType>(schema: S, method: string, path: string, body?: unknown): Promise<z.output<S>> {
    return parseAnswer(schema, await call<unknown>(this.options, method, path, body), `${method} ${this.options.url}${path}`);
  }

  private async delete(id: string): Promise<void> {
    await call(this.options, 'DELETE', `/v1/episodes/${encodeURIComponent(id)}`).catch(() => undefined);
  }

  private async task(split: Split, index: number): Promise<JsonValue> {
    const key = `${split}:${index}`;
    const cached = this.taskCache.get(key);
    if (cached !== undefined) return cached;
    const page = 100;
    const offset = Math.floor(index / page) * page;
    const res = await this.call(TasksResponse, 'GET', `/v1/tasks?split=${split}&offset=${offset}&limit=${page}`);
    if (this.taskCache.size > 10_000) this.taskCache.clear();
    res.tasks.forEach((t, i) => this.taskCache.set(`${split}:${offset + i}`, t));
    const task = this.taskCache.get(key);
    if (task === undefined) throw new EnvironmentError('ENV_INVALID_TASK', `No ${split} task ${index} at ${this.options.url}`, 'index');
    return task;
  }
}
