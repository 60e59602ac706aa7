import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { BatchStats, Episode, EnvironmentInstance, Split, StepResult, TaskSet } from './environment';
import { EnvironmentError } from './errors';
import { call, type CallOptions, type RequestOptions } from './http-call';
import { Message, type JsonObject, type JsonValue } from './messages';
import { OpenTinkerHealth, OpenTinkerResetResponse, OpenTinkerStepResponse } from './opentinker-protocol';
import { parseAnswer } from './protocol';

/** How {@link OpenTinkerEnvironment.connect} reaches a game server. */
export interface OpenTinkerEnvironmentOptions {
  /** Base URL of the (first) game server, e.g. `http://127.0.0.1:8081`. */
  url: string;
  /**
   * Servers on consecutive ports from the URL's port (OpenTinker's `--shards N`, its client's
   * `env_shards`). Each episode is routed to one of them by its instance id, as OpenTinker's client does.
   * Default 1.
   */
  shards?: number;
  /** Sent as `Authorization: Bearer <token>` (OpenTinker's servers ignore it; `opentinker env serve` checks it). */
  token?: string;
  /** `job_id` of every call: the server keeps statistics per job id. Default `default`, as upstream. */
  jobId?: string;
  /** Env kwargs sent with every `/reset`, under the task's own. */
  envKwargs?: JsonObject;
  /**
   * The tasks: each one the env kwargs of one `/reset`, plus optionally the data row's `prompt` (kept here
   * as the model's prompt, never sent). A split without a list is endless and every task of it is `{}`
   * (the server starts its game without kwargs).
   */
  tasks?: { train?: JsonObject[]; test?: JsonObject[] };
  /** Per-call timeout; a call that runs out fails with `ENV_TIMEOUT` and is not sent again. Default 30 s. */
  timeoutMs?: number;
  /** Attempts per call, as {@link RemoteEnvironmentOptions.retries}; `/reset` and `/finalize` count as idempotent. Default 5. */
  retries?: number;
  backoffMs?: number;
  fetch?: typeof fetch;
  /** See `RemoteEnvironmentOptions.opaqueErrors`. */
  opaqueErrors?: boolean;
  /** See `RemoteEnvironmentOptions.urlField`. */
  urlField?: string;
}

/** Longest `detail` of a server's error quoted in ours. */
const MAX_DETAIL_CHARS = 500;

/**
 * A server that speaks OpenTinker's game-server protocol (`opentinker-protocol.ts`), used like any
 * environment. Per episode: a
 * fresh `instance_id` (a UUID, as OpenTinker's `GymEnvironmentInteraction`), its shard picked by
 * `crc32(instance_id) % shards` (the same rule, so one server set can serve both clients), `/reset` with
 * the task's env kwargs, `/step` with the model's text, `/finalize` when the episode closes. A task's
 * `prompt` (a data row's) is the model's prompt and is not sent, as OpenTinker's clients keep it; without
 * one, the prompt is the reset's `system_prompt` (when not empty) and its `observation` as the first user
 * message.
 * {@link batchStats} resets and reads the server's per-job statistics around each batch, where
 * OpenTinker's training client calls `/stats/reset` and `/stats/step`.
 *
 * Calls go through the same client as {@link RemoteEnvironment}: the same retries, timeouts and codes.
 * A lost `/step` is never resent (the game may have moved); an unknown instance is `ENV_EPISODE_CLOSED`;
 * a game that raised (HTTP 500) is `ENV_INTERNAL`; a bad request (422) is `ENV_BAD_REQUEST`.
 *
 * @example
 * ```ts
 * const env = await OpenTinkerEnvironment.connect({ url: 'http://127.0.0.1:8081', shards: 2, jobId: 'job-1' });
 * const episode = env.newEpisode();
 * const messages = await episode.reset({ difficulty: 2 }, 0);
 * const result = await episode.step('<guess>50</guess>');
 * await episode.close();
 * ```
 */
export class OpenTinkerEnvironment implements EnvironmentInstance<JsonValue> {
  readonly tasks: TaskSet<JsonValue>;
  readonly batchStats: BatchStats;

  private constructor(
    private readonly shards: CallOptions[],
    private readonly jobId: string,
    private readonly envKwargs: JsonObject,
    tasks: { train?: JsonObject[]; test?: JsonObject[] },
  ) {
    this.tasks = {
      size: (split: Split) => tasks[split]?.length ?? null,
      get: (split: Split, index: number) => {
        const list = tasks[split];
        if (!list) return {};
        const task = list[index];
        if (task === undefined) throw new EnvironmentError('ENV_INVALID_TASK', `No ${split} task ${index} (the split has ${list.length})`, 'index');
        return task;
      },
    };
    this.batchStats = { begin: () => this.resetStats(), read: () => this.readStats() };
  }

  /** The base URL of every shard, in shard order. */
  get urls(): string[] {
    return this.shards.map((s) => s.url);
  }

  /**
   * Checks `GET /health` of every shard, then clears this job's statistics there (`/stats/reset_all`, as
   * OpenTinker's clients do before training). Fails with `ENV_UNAVAILABLE` naming the shard that does not
   * answer as a game server.
   */
  static async connect(options: OpenTinkerEnvironmentOptions): Promise<OpenTinkerEnvironment> {
    const base = {
      timeoutMs: options.timeoutMs ?? 30_000,
      retries: options.retries ?? 5,
      backoffMs: options.backoffMs ?? 200,
      fetch: options.fetch ?? globalThis.fetch,
      opaqueErrors: options.opaqueErrors ?? false,
      urlField: options.urlField,
      token: options.token,
    };
    const shards = shardUrls(options.url, options.shards ?? 1).map((url) => ({ ...base, url }));
    const jobId = options.jobId ?? 'default';
    for (const shard of shards) parseAnswer(OpenTinkerHealth, await call<unknown>(shard, 'GET', '/health'), `${shard.url}/health (not an OpenTinker game server?)`);
    const env = new OpenTinkerEnvironment(shards, jobId, options.envKwargs ?? {}, options.tasks ?? {});
    await env.eachShard('POST', `/stats/reset_all?job_id=${encodeURIComponent(jobId)}`);
    return env;
  }

  newEpisode(): Episode<JsonValue> {
    let instanceId: string | null = null;
    let shard: CallOptions | null = null;
    let closed = false;
    // The protocol's own keys win over a task's kwargs of the same name.
    const body = (extra: JsonObject) => ({ ...extra, instance_id: instanceId, job_id: this.jobId });
    return {
      reset: async (task: JsonValue): Promise<Message[]> => {
        if (closed) throw new EnvironmentError('ENV_EPISODE_CLOSED', 'The episode is closed');
        if (task !== null && (typeof task !== 'object' || Array.isArray(task))) {
          throw new EnvironmentError('ENV_INVALID_TASK', 'An OpenTinker task is an object of env kwargs', 'task');
        }
        // A data row's prompt stays here, as OpenTinker's clients keep it: only the env kwargs go to /reset.
        const { prompt, ...taskKwargs } = (task ?? {}) as JsonObject;
        const promptMessages = taskPromptMessages(prompt);
        // A fresh instance per reset: the previous one (if any) is finalized first, as an episode's end.
        if (instanceId) await this.finalize(shard!, body({}));
        instanceId = randomUUID();
        shard = this.shards[crc32(instanceId) % this.shards.length];
        // The task's kwargs win over the job's.
        const res = await call<unknown>(shard, 'POST', '/reset', body({ ...this.envKwargs, ...taskKwargs }), requestOptions('/reset', true));
        return resetMessages(res, shard.url, promptMessages);
      },
      step: async (action: string): Promise<StepResult> => {
        if (!instanceId || !shard) throw new EnvironmentError('ENV_NOT_RESET', 'Call reset() before step()');
        const res = await call<unknown>(shard, 'POST', '/step', body({ action }), requestOptions('/step', false));
        return stepResult(res, shard.url);
      },
      close: async () => {
        if (closed) return;
        closed = true;
        if (instanceId) await this.finalize(shard!, body({}));
      },
    };
  }

  /** `/finalize` never fails an episode: OpenTinker's client only logs a failed one. */
  private async finalize(shard: CallOptions, body: JsonObject): Promise<void> {
    await call(shard, 'POST', '/finalize', body, requestOptions('/finalize', true)).catch(() => undefined);
  }

  private async resetStats(): Promise<void> {
    await this.eachShard('POST', `/stats/reset?job_id=${encodeURIComponent(this.jobId)}`);
  }

  /**
   * This job's statistics of the current batch (`GET /stats/step`), numbers only, over every shard:
   * counts added up, every other number averaged with the shards' `games_in_step` as weights (each shard
   * counts only the games it served).
   */
  private async readStats(): Promise<Record<string, number>> {
    const answers = await this.eachShard('GET', `/stats/step?job_id=${encodeURIComponent(this.jobId)}`);
    return mergeShardStats(answers.filter((a): a is Record<string, unknown> => a !== null && typeof a === 'object' && !Array.isArray(a)));
  }

  /** A statistics call on every shard; a shard that fails is left out (statistics never fail a job). */
  private async eachShard(method: string, path: string): Promise<unknown[]> {
    const answers = await Promise.all(this.shards.map((s) => call<unknown>(s, method, path, method === 'POST' ? {} : undefined, requestOptions(path, true)).catch(() => null)));
    return answers.filter((a) => a !== null);
  }
}

/** Keys of OpenTinker's `BaseGameStats.get_step_stats` (and cumulative stats) that count things: summed over shards. */
const COUNT_KEYS = new Set(['total_samples', 'games_in_step', 'incomplete_samples', 'total_interactions', 'total_games', 'total_incomplete']);

/** See {@link OpenTinkerEnvironment.readStats}; `step` (the server's own counter) is dropped, as upstream's client does. */
export function mergeShardStats(shards: Array<Record<string, unknown>>): Record<string, number> {
  const sums: Record<string, number> = {};
  const weighted: Record<string, { sum: number; weight: number }> = {};
  for (const stats of shards) {
    const games = typeof stats.games_in_step === 'number' && Number.isFinite(stats.games_in_step) ? stats.games_in_step : 0;
    for (const [key, value] of Object.entries(stats)) {
      if (key === 'step' || typeof value !== 'number' || !Number.isFinite(value)) continue;
      if (COUNT_KEYS.has(key)) {
        sums[key] = (sums[key] ?? 0) + value;
        continue;
      }
      const w = (weighted[key] ??= { sum: 0, weight: 0 });
      // A shard that finished no game still counts, lightly, so a mean exists when no shard finished one.
      const weight = games > 0 ? games : 1e-9;
      w.sum += value * weight;
      w.weight += weight;
    }
  }
  const out: Record<string, number> = { ...sums };
  for (const [key, { sum, weight }] of Object.entries(weighted)) out[key] = weight > 0 ? sum / weight : 0;
  if (out.total_samples !== undefined && out.games_in_step !== undefined) out.completion_rate = out.total_samples > 0 ? out.games_in_step / out.total_samples : 0;
  return out;
}

/**
 * The shard URLs: `url`, then the same URL with the port counted up (OpenTinker derives `env_endpoints`
 * from `env_endpoint` + `env_shards` this way). A host of `0.0.0.0` (a bind address that upstream configs
 * often carry) becomes `127.0.0.1`, the host Linux connects upstream's client to.
 */
export function shardUrls(raw: string, shards: number): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EnvironmentError('ENV_INVALID_CONFIG', `${raw} is not a URL`, 'url');
  }
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  if (!Number.isInteger(shards) || shards < 1 || shards > 256) throw new EnvironmentError('ENV_INVALID_CONFIG', 'shards must be a whole number from 1 to 256', 'shards');
  const text = (u: URL) => u.href.replace(/\/+$/, '');
  if (shards === 1) return [text(url)];
  if (!url.port) throw new EnvironmentError('ENV_INVALID_CONFIG', `shards ${shards} needs a port in the URL (${raw}): the shards listen on consecutive ports from it`, 'url');
  const first = Number(url.port);
  if (first + shards - 1 > 65535) throw new EnvironmentError('ENV_INVALID_CONFIG', `shards ${shards} from port ${first} run past port 65535`, 'shards');
  return Array.from({ length: shards }, (_, i) => {
    const u = new URL(url.href);
    u.port = String(first + i);
    return text(u);
  });
}

/** CRC-32 (IEEE, zlib's) of a string's UTF-8 bytes: Python's `zlib.crc32(s.encode('utf-8'))`. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function requestOptions(path: string, idempotent: boolean): RequestOptions {
  return { idempotent, errorAnswer: (status, body) => fastApiError(path, status, body) };
}

/** FastAPI's error answers, as our codes (a server that passed the health check speaks the protocol). */
function fastApiError(path: string, status: number, body: unknown): EnvironmentError | null {
  const b = (body ?? {}) as { detail?: unknown; code?: unknown; message?: unknown; field?: unknown };
  // `opentinker env serve --protocol opentinker` adds our code beside FastAPI's detail (a text, or a 422's list).
  const first = Array.isArray(b.detail) ? (b.detail[0] as { msg?: unknown } | undefined)?.msg : b.detail;
  if (typeof b.code === 'string' && b.code.startsWith('ENV_') && typeof first === 'string') {
    return new EnvironmentError(b.code as EnvironmentError['code'], clip(first), typeof b.field === 'string' ? b.field : undefined);
  }
  const where = `POST ${path}`;
  if (status === 401 || status === 403) return new EnvironmentError('ENV_UNAUTHENTICATED', `${where}: the game server refused the token (HTTP ${status})`);
  if (status === 404 && path === '/step' && typeof b.detail === 'string' && b.detail.startsWith('Instance')) {
    return new EnvironmentError('ENV_EPISODE_CLOSED', `The game server lost the episode: ${clip(b.detail)}`);
  }
  if (status === 404 || status === 405) return new EnvironmentError('ENV_NO_ROUTE', `The server has no ${path.split('?')[0]} (HTTP ${status}): not an OpenTinker game server?`);
  if (status === 422) {
    const first = Array.isArray(b.detail) ? (b.detail[0] as { loc?: unknown; msg?: unknown } | undefined) : undefined;
    // FastAPI's loc starts with where the field is (`body`, `query`).
    const field = Array.isArray(first?.loc) ? first!.loc.filter((p, i) => !(i === 0 && (p === 'body' || p === 'query'))).join('.') : undefined;
    const msg = typeof first?.msg === 'string' ? first.msg : typeof b.detail === 'string' ? b.detail : 'invalid request';
    return new EnvironmentError('ENV_BAD_REQUEST', `${where}: the game server refused the request${field ? ` (${field})` : ''}: ${clip(msg)}`, field || undefined);
  }
  if (status >= 500) {
    const detail = typeof b.detail === 'string' ? `: ${clip(b.detail)}` : '; its log has the traceback';
    return new EnvironmentError('ENV_INTERNAL', `The game failed on ${where} (HTTP ${status})${detail}`);
  }
  return null;
}

function clip(text: string): string {
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS)}…` : text;
}

/**
 * The episode's first messages, as OpenTinker's clients build them. A task with a `prompt` (a data row's:
 * `StaticDatasetGenerator`) starts from it, the reset's `system_prompt` before it unless it starts with a
 * system message; the reset's `observation` is not shown (OpenTinker's `MathGame` answers "Please solve
 * the following problem:", a placeholder for the client's prompt, and its agent loop and inference
 * pipeline never add it). A task without one (a game's kwargs, e.g. gomoku's `initial_moves`) starts
 * from the reset's `system_prompt` and `observation`: the game's own first message, where OpenTinker's
 * client renders the same board from the game class it imports.
 */
function resetMessages(res: unknown, url: string, prompt: Message[] | null): Message[] {
  const r = parseAnswer(OpenTinkerResetResponse, res, `${url}/reset`);
  const messages: Message[] = [];
  if (r.system_prompt && prompt?.[0]?.role !== 'system') messages.push({ role: 'system', content: r.system_prompt });
  if (prompt) messages.push(...prompt);
  else messages.push({ role: 'user', content: r.observation });
  return messages;
}

/**
 * A task's `prompt` as messages, as `StaticDatasetGenerator` reads a row's: a list of messages as it is,
 * anything else one user message with its text; null when the task has none.
 */
function taskPromptMessages(prompt: JsonValue | undefined): Message[] | null {
  if (prompt === undefined || prompt === null) return null;
  if (typeof prompt === 'string') return [{ role: 'user', content: prompt }];
  const messages = z.array(Message).min(1).safeParse(prompt);
  if (!messages.success) throw new EnvironmentError('ENV_INVALID_TASK', "A task's prompt must be a text or a non-empty list of {role, content} messages", 'task.prompt');
  return messages.data.map(({ role, content }) => ({ role, content }));
}

function stepResult(res: unknown, url: string): StepResult {
  const { observation, reward, done, info } = parseAnswer(OpenTinkerStepResponse, res, `${url}/step`);
  return { observation, reward, done, info };
}
