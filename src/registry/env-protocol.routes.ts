import { configJsonSchema, CreateEpisodeRequest, EnvironmentError, isEnvironmentError, parseRequest, PROTOCOL_VERSION, StepRequest, TasksQuery } from '@opentinker/env-sdk';
import type { CreateEpisodeResponse, InfoResponse, JsonObject, JsonValue, ProtocolError, StepResponse, TasksResponse } from '@opentinker/env-sdk';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { NO_HOST_PATHS, type HostPaths } from '../core/host-paths';
import type { EpisodeStore } from './episode-store';

export interface ProtocolRouteOptions {
  store: EpisodeStore;
  /** Bearer token every call except /health must carry; none means open. */
  token?: string;
  /**
   * Checks the request's key headers instead of a fixed token (the main server's API keys); throws to
   * refuse. Returns the caller's id: episodes belong to the caller that created them.
   */
  authorize?: (headers: FastifyRequest['headers'], address: string) => Promise<string>;
  /** The server's folders, named in error answers instead of spelled out (the API's; `env serve` shows its own). */
  hostPaths?: HostPaths;
}

/** The HTTP status of each environment error code, on both protocols' routes. */
export const ENV_ERROR_STATUS: Record<string, number> = {
  ENV_BAD_REQUEST: 400,
  ENV_INVALID_CONFIG: 400,
  ENV_CONFIG_FORBIDDEN: 400,
  ENV_CONFIG_LIMIT: 400,
  ENV_INVALID_TASK: 400,
  ENV_NOT_RESET: 409,
  ENV_STEP_AFTER_DONE: 409,
  ENV_EPISODE_CLOSED: 404,
  ENV_CAPACITY: 429,
  ENV_SANDBOX_UNAVAILABLE: 503,
  ENV_UNAVAILABLE: 503,
  ENV_TIMEOUT: 504,
  ENV_INTERNAL: 500,
};

/** Longest episode id a route takes (the store makes UUIDs). */
const MAX_EPISODE_ID_CHARS = 64;

/**
 * The HTTP environment protocol (see `@opentinker/env-sdk` `protocol.ts`) over one environment, as
 * Fastify routes. Registered by `opentinker env serve` and by the API for each loaded environment;
 * queries and bodies are checked with the SDK's schemas, so a bad call is a 400 `ENV_BAD_REQUEST` with
 * the field, never a crash.
 */
export async function envProtocolRoutes(app: FastifyInstance, { store, token, authorize, hostPaths = NO_HOST_PATHS }: ProtocolRouteOptions): Promise<void> {
  const expected = token ? Buffer.from(`Bearer ${token}`) : null;
  // The caller's id per request (one owner, '', when a fixed token or none guards the server).
  const owners = new WeakMap<FastifyRequest, string>();
  const owner = (request: FastifyRequest) => owners.get(request) ?? '';
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (authorize) {
      try {
        owners.set(request, await authorize(request.headers, request.ip));
      } catch (e) {
        const {
          statusCode = 401,
          code = 'ENV_UNAUTHENTICATED',
          message = 'Unauthenticated',
          field,
        } = e as { status?: number; statusCode?: number; code?: string; message?: string; field?: string };
        const status = (e as { status?: number }).status ?? statusCode;
        const retryAfter = (e as { retryAfter?: number }).retryAfter;
        if (retryAfter !== undefined) reply.header('retry-after', String(Math.ceil(retryAfter)));
        return reply.code(status).send(error(status, code, message, field));
      }
      return;
    }
    if (!expected || request.url.endsWith('/health')) return;
    const got = Buffer.from(request.headers.authorization ?? '');
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
      return reply.code(401).send(error(401, 'ENV_UNAUTHENTICATED', 'Missing or wrong bearer token', 'authorization'));
    }
  });
  app.setErrorHandler((err: unknown, _request, reply) => {
    const send = (status: number, code: string, message: string, field?: string) => reply.code(status).send(error(status, code, hostPaths.redact(message), field));
    if (isEnvironmentError(err)) return send(ENV_ERROR_STATUS[err.code] ?? 500, err.code, err.message, err.field);
    const e = err as { statusCode?: number; message?: string; field?: string };
    if (e.statusCode && e.statusCode < 500) return send(e.statusCode, 'ENV_BAD_REQUEST', e.message ?? 'bad request', e.field);
    return send(500, 'ENV_INTERNAL', `${store.env.id} failed: ${e.message ?? String(err)}`);
  });
  if (!authorize) {
    app.setNotFoundHandler((request, reply) => reply.code(404).send(error(404, 'ENV_NO_ROUTE', `No route ${request.method} ${request.url}`)));
  }

  app.get('/health', async () => ({ status: 'ok', episodes: store.open }));

  app.get('/v1/info', async (): Promise<InfoResponse> => {
    const inst = await store.instance();
    return {
      id: store.env.id,
      version: store.env.version,
      protocol_version: PROTOCOL_VERSION,
      description: store.env.description,
      turn_mode: store.env.turnMode,
      task_source: store.env.taskSource,
      config_schema: configJsonSchema(store.env),
      config: store.defaults as JsonObject,
      tasks: { train: inst.tasks.size('train'), test: inst.tasks.size('test') },
    };
  });

  app.get('/v1/tasks', async (request): Promise<TasksResponse> => {
    const q = parseRequest(TasksQuery, request.query);
    const { total, tasks } = await store.tasks(q.split, q.offset, q.limit);
    return { split: q.split, offset: q.offset, total, tasks: tasks as JsonValue[] };
  });

  app.post('/v1/episodes', async (request, reply): Promise<CreateEpisodeResponse> => {
    const { id, messages, task } = await store.create(parseRequest(CreateEpisodeRequest, request.body), owner(request));
    reply.code(201);
    return { episode_id: id, messages, task: task as JsonValue };
  });

  app.post('/v1/episodes/:id/step', async (request): Promise<StepResponse> => {
    const { action } = parseRequest(StepRequest, request.body);
    const r = await store.step(episodeId(request), action, owner(request));
    return { observation: r.observation, observation_role: r.observationRole ?? 'user', reward: r.reward, done: r.done, info: r.info };
  });

  app.delete('/v1/episodes/:id', async (request, reply) => {
    const id = episodeId(request);
    if (!(await store.close(id, owner(request)))) return reply.code(404).send(error(404, 'ENV_EPISODE_CLOSED', `Episode ${id} does not exist or has expired`, 'id'));
    return reply.code(204).send();
  });
}

/** The `:id` of an episode route; a longer one than any the store makes is a 400. */
function episodeId(request: FastifyRequest): string {
  const { id } = request.params as { id: string };
  if (id.length > MAX_EPISODE_ID_CHARS) throw new EnvironmentError('ENV_BAD_REQUEST', `id: at most ${MAX_EPISODE_ID_CHARS} characters`, 'id');
  return id;
}

function error(statusCode: number, code: string, message: string, field?: string): ProtocolError {
  return field ? { statusCode, code, message, field } : { statusCode, code, message };
}
