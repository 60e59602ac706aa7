import {
  crc32,
  EnvironmentError,
  isEnvironmentError,
  OPENTINKER_RESET_KEYS,
  OpenTinkerFinalizeRequest,
  OpenTinkerResetRequest,
  OpenTinkerStatsQuery,
  OpenTinkerStepRequest,
  parseRequest,
} from '@opentinker/env-sdk';
import type { JsonObject, JsonValue, Message, OpenTinkerResetResponse, OpenTinkerStepResponse, Split } from '@opentinker/env-sdk';
import type { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import type { EpisodeStore } from './episode-store';
import { MultiJobGameStats } from './opentinker-game-stats';
import { ENV_ERROR_STATUS } from './env-protocol.routes';

/**
 * What the shards of one `env serve --protocol opentinker` share: instance ids name episodes of the
 * store whichever port a call arrives on, so a client may route an instance to any shard.
 */
export class OpenTinkerServerState {
  /** instance_id → the store's episode id. */
  readonly instances = new Map<string, string>();
  readonly stats = new MultiJobGameStats();
  /** Next train task per job_id, for resets that name no task. */
  readonly cursors = new Map<string, number>();
}

export interface OpenTinkerRouteOptions {
  store: EpisodeStore;
  state: OpenTinkerServerState;
  /** Bearer token every call except /health must carry; none means open (as OpenTinker's servers). */
  token?: string;
}

const MAX_INSTANCES = 16_384;

/**
 * OpenTinker's game-server protocol (`base_game_server.py`) over one of our environments: what
 * `opentinker env serve <id> --protocol opentinker` serves, so OpenTinker's trainer and clients
 * (`GymEnvironmentInteraction`, `GameStatsClient`) can use any installed environment.
 *
 * `/reset` kwargs map to our episodes: `task` is the task itself; `split` + `index` one of the
 * environment's tasks; with neither, other kwargs are the task (OpenTinker's `env_kwargs` of a dataset
 * row, e.g. math's `prompt` and `ground_truth`) and no kwargs at all take the job's next train task.
 * `seed` (default: from the instance id) and `config` (the per-episode config, under the operator's
 * policy) pass through. The answer's `system_prompt` is the episode's system message, `observation` the
 * rest of its first messages, `game_state` the task. Requests are checked with the SDK's schemas
 * (`opentinker-protocol.ts`). Errors have FastAPI's `{ detail }`, plus our `code`.
 */
export async function openTinkerProtocolRoutes(app: FastifyInstance, { store, state, token }: OpenTinkerRouteOptions): Promise<void> {
  const expected = token ? Buffer.from(`Bearer ${token}`) : null;
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // An empty body is no body, whatever its content type says (FastAPI reads none where a route takes none).
    if (request.headers['content-length'] === '0') delete request.headers['content-type'];
    if (!expected || request.url === '/health') return;
    const got = Buffer.from(request.headers.authorization ?? '');
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
      return reply.code(401).send(detail('Missing or wrong bearer token', 'ENV_UNAUTHENTICATED', 'authorization'));
    }
  });
  app.setErrorHandler((err: unknown, _request, reply) => {
    if (err instanceof RequestError) return reply.code(422).send(invalid(err.where, err.field, err.message, err.type, err.code, err.more));
    if (isEnvironmentError(err)) {
      // A request the game cannot play (a bad task or config) is FastAPI's 422, as a body pydantic refuses.
      if (UNPROCESSABLE.has(err.code)) return reply.code(422).send(invalid('body', err.field ?? '', err.message, 'value_error', err.code));
      return reply
        .code(err.code === 'ENV_NOT_RESET' || err.code === 'ENV_STEP_AFTER_DONE' ? 404 : (ENV_ERROR_STATUS[err.code] ?? 500))
        .send(detail(err.message, err.code, err.field));
    }
    const e = err as { statusCode?: number; message?: string; code?: string; field?: string };
    // Fastify's own refusals of a body, in FastAPI's words: malformed JSON, a body that is not JSON.
    if (e.statusCode === 400 && e.code?.startsWith('FST_ERR_CTP')) return reply.code(422).send(invalid('body', '', 'JSON decode error', 'json_invalid'));
    if (e.statusCode === 415) return reply.code(422).send(invalid('body', '', NOT_AN_OBJECT, 'model_attributes_type'));
    if (e.statusCode && e.statusCode < 500) return reply.code(e.statusCode).send(detail(e.message ?? 'bad request', 'ENV_BAD_REQUEST', e.field));
    return reply.code(500).send(detail(`${store.env.id} failed: ${e.message ?? String(err)}`, 'ENV_INTERNAL'));
  });
  // FastAPI answers 405 for a known path asked with another method, 404 for an unknown path.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    if (ROUTES.has(path) || path.startsWith('/stats/job/')) return reply.code(405).send(detail('Method Not Allowed', 'ENV_NO_ROUTE'));
    return reply.code(404).send(detail('Not Found', 'ENV_NO_ROUTE'));
  });

  app.get('/health', async () => ({ status: 'healthy' }));

  app.post('/reset', async (request): Promise<OpenTinkerResetResponse> => {
    const body = parse(OpenTinkerResetRequest, bodyOf(request), 'body');
    const { instance_id: instanceId, job_id: jobId, config } = body;
    const previous = state.instances.get(instanceId);
    // A second reset of an instance id starts it over, as upstream reuses the instance's game.
    if (previous) {
      state.instances.delete(instanceId);
      await store.close(previous);
    }
    const seed = body.seed ?? crc32(instanceId);
    const kwargs = Object.fromEntries(Object.entries(body).filter(([k]) => !OPENTINKER_RESET_KEYS.has(k))) as JsonObject;
    let req: { task?: JsonValue; split?: Split; index?: number };
    if (body.task !== undefined) req = { task: body.task };
    else if (body.split !== undefined || body.index !== undefined) req = { split: body.split ?? 'train', index: body.index ?? 0 };
    else if (Object.keys(kwargs).length > 0) req = { task: kwargs };
    else req = { split: 'train', index: await nextTrainIndex(jobId, config) };
    const { id, messages, task } = await store.create({ ...req, seed, ...(config ? { config } : {}) }).catch((error: unknown) => {
      // With the kwargs as the task, what the game names `task.x` is the body's `x`.
      if (isEnvironmentError(error) && req.task === kwargs && error.field?.startsWith('task.')) throw new EnvironmentError(error.code, error.message, error.field.slice(5));
      throw error;
    });
    state.instances.set(instanceId, id);
    // Instances never finalized (their episodes expire in the store) are forgotten past a bound.
    if (state.instances.size > MAX_INSTANCES) {
      const [oldest, episode] = state.instances.entries().next().value!;
      state.instances.delete(oldest);
      await store.close(episode);
    }
    state.stats.job(jobId).registerStart(instanceId);
    return resetAnswer(messages, task);
  });

  app.post('/step', async (request, reply) => {
    const { instance_id: instanceId, job_id: jobId, action } = parse(OpenTinkerStepRequest, bodyOf(request), 'body');
    const id = state.instances.get(instanceId);
    if (!id) return reply.code(404).send(detail(`Instance ${instanceId} not found. Call /reset first.`, 'ENV_EPISODE_CLOSED', 'instance_id'));
    let result;
    try {
      result = await store.step(id, action);
    } catch (error) {
      // The store closes an episode whose step failed outside the environment's own errors: forget it too.
      if (isEnvironmentError(error) && error.code === 'ENV_EPISODE_CLOSED') state.instances.delete(instanceId);
      throw error;
    }
    state.stats.job(jobId).record(instanceId, result.reward, result.done, result.info);
    // A finished game is forgotten, as upstream deletes it: a later /step is a 404, /finalize is ignored.
    if (result.done) {
      state.instances.delete(instanceId);
      await store.close(id);
    }
    const answer: OpenTinkerStepResponse = { observation: result.observation, reward: result.reward, done: result.done, info: result.info };
    return answer;
  });

  app.post('/finalize', async (request) => {
    const { instance_id: instanceId } = parse(OpenTinkerFinalizeRequest, bodyOf(request), 'body');
    const id = state.instances.get(instanceId);
    if (!id) return { message: `Instance ${instanceId} not found`, status: 'ignored' };
    state.instances.delete(instanceId);
    await store.close(id);
    return { message: `Instance ${instanceId} removed` };
  });

  const jobOf = (request: FastifyRequest): string => parse(OpenTinkerStatsQuery, request.query, 'query').job_id ?? 'default';
  app.get('/stats', async (request) => {
    const job = jobOf(request);
    const stats = state.stats.job(job);
    return { ...stats.stepStats(), ...stats.cumulativeStats(), job_id: job };
  });
  app.get('/stats/step', async (request) => {
    const job = jobOf(request);
    return { ...state.stats.job(job).stepStats(), job_id: job };
  });
  app.get('/stats/cumulative', async (request) => {
    const job = jobOf(request);
    return { ...state.stats.job(job).cumulativeStats(), job_id: job };
  });
  app.post('/stats/reset', async (request) => {
    const job = jobOf(request);
    return { ...state.stats.job(job).resetStep(), job_id: job };
  });
  app.post('/stats/reset_all', async (request) => {
    if (parse(OpenTinkerStatsQuery, request.query, 'query').job_id === undefined) return state.stats.resetAllJobs();
    const job = jobOf(request);
    return { ...state.stats.job(job).resetAll(), job_id: job };
  });
  app.get('/stats/jobs', async () => {
    const jobs = state.stats.list();
    return { jobs, count: jobs.length };
  });
  app.delete('/stats/job/:job_id', async (request, reply) => {
    const { job_id } = request.params as { job_id: string };
    if (!state.stats.remove(job_id)) return reply.code(404).send(detail(`Job ${job_id} not found`, 'ENV_NO_ROUTE'));
    return { message: `Statistics for job ${job_id} removed`, job_id };
  });

  /** The job's next train task, round the split when it is finite. */
  async function nextTrainIndex(jobId: string, config: JsonObject | undefined): Promise<number> {
    const size = (await store.instance(config)).tasks.size('train');
    const n = state.cursors.get(jobId) ?? 0;
    state.cursors.set(jobId, n + 1);
    if (state.cursors.size > 1024) state.cursors.delete(state.cursors.keys().next().value!);
    return size === null || size === 0 ? n : n % size;
  }
}

/** The paths this server answers, for FastAPI's 405 on another method. */
const ROUTES = new Set(['/health', '/reset', '/step', '/finalize', '/stats', '/stats/step', '/stats/cumulative', '/stats/reset', '/stats/reset_all', '/stats/jobs']);

/** Codes of a request the game cannot play: FastAPI's 422. */
const UNPROCESSABLE = new Set(['ENV_BAD_REQUEST', 'ENV_INVALID_TASK', 'ENV_INVALID_CONFIG', 'ENV_CONFIG_FORBIDDEN', 'ENV_CONFIG_LIMIT']);

const NOT_AN_OBJECT = 'Input should be a valid dictionary or object to extract fields from';

/** A request part of the wrong shape: FastAPI's 422, naming where (`body`, `query`) and the field (the first of `more`). */
class RequestError extends Error {
  constructor(
    readonly where: 'body' | 'query',
    readonly field: string,
    message: string,
    readonly type = 'value_error',
    readonly code = 'ENV_BAD_REQUEST',
    /** Every field refused, as pydantic lists them all. */
    readonly more: Array<{ field: string; msg: string }> = [{ field, msg: message }],
  ) {
    super(message);
  }
}

/** The JSON body: pydantic's model needs one, an object (FastAPI: 422 `missing` / `model_attributes_type` at `["body"]`). */
function bodyOf(request: FastifyRequest): unknown {
  const body = request.body;
  if (body === undefined || body === null) throw new RequestError('body', '', 'Field required', 'missing');
  if (typeof body !== 'object' || Array.isArray(body)) throw new RequestError('body', '', NOT_AN_OBJECT, 'model_attributes_type');
  return body;
}

/** A request part checked with its schema; a bad one is FastAPI's 422 naming every refused field. */
function parse<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query'): z.output<S> {
  try {
    return parseRequest(schema, value);
  } catch (error) {
    if (!isEnvironmentError(error)) throw error;
    const issues = schema.safeParse(value).error?.issues ?? [];
    const more = issues.map((i) => ({ field: i.path.map(String).join('.'), msg: i.message }));
    throw new RequestError(where, error.field ?? '', error.message, 'value_error', 'ENV_BAD_REQUEST', more.length > 0 ? more : undefined);
  }
}

/** FastAPI's 422: `detail` lists each error at `loc` (where, then the field's path), plus our code and (first) field. */
function invalid(where: 'body' | 'query', field: string, msg: string, type: string, code = 'ENV_BAD_REQUEST', more = [{ field, msg }]): Record<string, unknown> {
  const loc = (f: string) => [where, ...(f === '' ? [] : f.split('.').map((p) => (/^\d+$/.test(p) ? Number(p) : p)))];
  return { detail: more.map((m) => ({ type, loc: loc(m.field), msg: m.msg })), code, field: field || where };
}

function detail(message: string, code: string, field?: string): Record<string, string> {
  return field ? { detail: message, code, field } : { detail: message, code };
}

/** Our first messages as OpenTinker's reset answer: the system message apart, the others as the observation. */
function resetAnswer(messages: Message[], task: unknown): OpenTinkerResetResponse {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content);
  const rest = messages.filter((m) => m.role !== 'system').map((m) => m.content);
  if (rest.length === 0) throw new EnvironmentError('ENV_INTERNAL', 'The environment started an episode without a first message');
  return { observation: rest.join('\n\n'), system_prompt: system.length > 0 ? system.join('\n\n') : null, game_state: { task: (task ?? null) as JsonValue } };
}
