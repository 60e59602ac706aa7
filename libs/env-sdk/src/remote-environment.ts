import type { Episode, EnvironmentInstance, Split, StepResult, TaskSet } from './environment';
import { EnvironmentError, EnvironmentErrorCode } from './errors';
import type { JsonObject, JsonValue, Message } from './messages';
import {
  CreateEpisodeResponse,
  InfoResponse,
  PROTOCOL_VERSION,
  ProtocolError,
  StepResponse,
  TasksResponse,
} from './protocol';

export interface RemoteEnvironmentOptions {
  /** Base URL of the environment server, e.g. `http://127.0.0.1:8088`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when the server requires one. */
  token?: string;
  /** Config overrides sent with every new episode. */
  config?: JsonObject;
  /** Per-call timeout. Default 30 s. */
  timeoutMs?: number;
  /** Attempts for a call that fails to connect (with exponential backoff). Default 5. */
  retries?: number;
  /** First backoff delay; doubles each attempt. Default 200 ms. */
  backoffMs?: number;
  fetch?: typeof fetch;
}

/** Codes that mean the server answered but refused: retrying would not help. */
const CONNECT_ERRORS = /ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR_SOCKET|fetch failed|other side closed/i;

/**
 * An environment served over the HTTP protocol, used exactly like a local one: it implements
 * {@link EnvironmentInstance}. Calls that cannot connect are retried with backoff; when the server
 * stays unreachable the call fails with `ENV_UNAVAILABLE` naming the URL.
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
    private readonly options: Required<Omit<RemoteEnvironmentOptions, 'token' | 'config'>> & Pick<RemoteEnvironmentOptions, 'token' | 'config'>,
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
      ...options,
      url: options.url.replace(/\/+$/, ''),
    };
    const info = await call<InfoResponse>(full, 'GET', '/v1/info');
    if (info.protocol_version !== PROTOCOL_VERSION) {
      throw new EnvironmentError('ENV_UNAVAILABLE', `${full.url} speaks protocol ${info.protocol_version}; this client speaks ${PROTOCOL_VERSION}`);
    }
    return new RemoteEnvironment(full, info);
  }

  newEpisode(): Episode<JsonValue> {
    let id: string | null = null;
    let closed = false;
    return {
      reset: async (task: JsonValue, seed: number): Promise<Message[]> => {
        if (id) await this.delete(id);
        const res = await call<CreateEpisodeResponse>(this.options, 'POST', '/v1/episodes', { task, seed, config: this.options.config });
        id = res.episode_id;
        return res.messages;
      },
      step: async (action: string): Promise<StepResult> => {
        if (!id) throw new EnvironmentError('ENV_NOT_RESET', 'Call reset() before step()');
        const res = await call<StepResponse>(this.options, 'POST', `/v1/episodes/${encodeURIComponent(id)}/step`, { action });
        return { observation: res.observation, observationRole: res.observation_role, reward: res.reward, done: res.done, info: res.info };
      },
      close: async () => {
        if (closed) return;
        closed = true;
        if (id) await this.delete(id);
      },
    };
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
    const res = await call<TasksResponse>(this.options, 'GET', `/v1/tasks?split=${split}&offset=${offset}&limit=${page}`);
    if (this.taskCache.size > 10_000) this.taskCache.clear();
    res.tasks.forEach((t, i) => this.taskCache.set(`${split}:${offset + i}`, t));
    const task = this.taskCache.get(key);
    if (task === undefined) throw new EnvironmentError('ENV_INVALID_TASK', `No ${split} task ${index} at ${this.options.url}`, 'index');
    return task;
  }
}

type CallOptions = Pick<RemoteEnvironmentOptions, 'token'> & { url: string; timeoutMs: number; retries: number; backoffMs: number; fetch: typeof fetch };

async function call<T>(o: CallOptions, method: string, path: string, body?: unknown): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < Math.max(1, o.retries); attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, o.backoffMs * 2 ** (attempt - 1)));
    let res: Response;
    try {
      res = await o.fetch(o.url + path, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(o.timeoutMs),
      });
    } catch (error) {
      lastError = error;
      const text = `${(error as Error)?.message ?? ''} ${String((error as { cause?: { code?: string } })?.cause?.code ?? '')}`;
      if ((error as Error)?.name === 'TimeoutError') {
        throw new EnvironmentError('ENV_TIMEOUT', `${method} ${o.url}${path} took longer than ${o.timeoutMs} ms`);
      }
      if (CONNECT_ERRORS.test(text)) continue;
      throw new EnvironmentError('ENV_UNAVAILABLE', `${method} ${o.url}${path} failed: ${text.trim()}`);
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new EnvironmentError('ENV_UNAVAILABLE', `${method} ${o.url}${path} answered ${res.status} with non-JSON`);
    }
    if (res.ok) return parsed as T;
    if (res.status >= 500 && res.status !== 501 && attempt + 1 < o.retries && method !== 'POST') continue;
    const err = (parsed ?? {}) as Partial<ProtocolError>;
    const code = (typeof err.code === 'string' && err.code.startsWith('ENV_') ? err.code : 'ENV_UNAVAILABLE') as EnvironmentErrorCode;
    throw new EnvironmentError(code, err.message ?? `${method} ${o.url}${path} answered ${res.status}`, err.field);
  }
  const reason = (lastError as Error)?.message ?? 'unknown error';
  throw new EnvironmentError(
    'ENV_UNAVAILABLE',
    `Environment server ${o.url} is unreachable after ${o.retries} attempts (${reason}); is it running?`,
  );
}
