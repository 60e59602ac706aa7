import { z } from 'zod';
import type { StepResult } from './environment';
import { EnvironmentError } from './errors';
// eslint-disable-next-line @typescript-eslint/no-unused-vars
import type { EnvironmentErrorCode } from './errors';
import { JsonObject, JsonValue, Message } from './messages';

/**
 * The HTTP environment protocol (JSON, versioned under `/v1`), as zod schemas; each type is the
 * schema's output. Any language can implement it; `opentinker env serve` serves it for any environment
 * package and checks requests with these schemas, `RemoteEnvironment` checks answers with them,
 * and the server's OpenAPI document is generated from them (component names in `.meta({ id })`).
 *
 * - `GET /health` → `{ status: 'ok' }`
 * - `GET /v1/info` → {@link InfoResponse}
 * - `GET /v1/tasks?split=train|test&offset=0&limit=100` ({@link TasksQuery}) → {@link TasksResponse}
 * - `POST /v1/episodes` {@link CreateEpisodeRequest} → {@link CreateEpisodeResponse}
 * - `POST /v1/episodes/:id/step` {@link StepRequest} → {@link StepResponse}
 * - `DELETE /v1/episodes/:id` → 204
 * Errors: status 4xx/5xx with {@link ProtocolError}.
 */

/** The protocol version this SDK speaks; servers report theirs in {@link InfoResponse.protocol_version}. */
export const PROTOCOL_VERSION = '1';

/** Longest action a server takes (characters). */
export const MAX_ACTION_CHARS = 1024 * 1024;

const Split = z.enum(['train', 'test']);
const TaskCount = z.number().int().min(0).nullable();

/** `GET /v1/info`: what the server serves. */
export const InfoResponse = z
  .object({
    id: z.string(),
    version: z.string(),
    protocol_version: z.string().meta({ example: PROTOCOL_VERSION }),
    description: z.string(),
    turn_mode: z.enum(['single', 'multi']),
    task_source: z.enum(['dataset', 'generator']),
    config_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the per-episode config'),
    config: JsonObject.describe("The server's default config, with defaults filled in"),
    tasks: z.object({ train: TaskCount, test: TaskCount }).describe('Task counts under the default config; null means endless'),
  })
  .meta({ id: 'EnvInfo' });
export type InfoResponse = z.output<typeof InfoResponse>;

/** The query of `GET /v1/tasks` (numbers as the query string carries them), with its defaults. */
export const TasksQuery = z
  .object({
    split: Split.default('train'),
    offset: z.coerce.number().int().min(0).default(0),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();
export type TasksQuery = z.output<typeof TasksQuery>;

/** `GET /v1/tasks?split&offset&limit`: one page of a split's tasks. */
export const TasksResponse = z
  .object({
    split: Split,
    offset: z.number().int().min(0).describe('Index of `tasks[0]` in the split'),
    total: z.number().int().min(0).nullable().describe('Tasks in the split; null for an endless generator'),
    tasks: z.array(JsonValue),
  })
  .meta({ id: 'EnvTasks' });
export type TasksResponse = z.output<typeof TasksResponse>;

/** Body of `POST /v1/episodes`: starts an episode. */
export const CreateEpisodeRequest = z
  .object({
    task: JsonValue.optional().describe('The task itself; or leave it out and name one of the server’s tasks by `split` and `index`'),
    split: Split.optional(),
    index: z.number().int().min(0).optional(),
    seed: z.number().int(),
    config: JsonObject.optional().describe("Overrides of the server's default config for this episode"),
  })
  .strict()
  .describe('Either `task`, or `split` + `index` of one of the server’s tasks')
  .meta({ id: 'EnvCreateEpisode' });
export type CreateEpisodeRequest = z.output<typeof CreateEpisodeRequest>;

/** Longest text a host takes into a conversation from one answer of an environment (characters): an observation, or the first messages together. */
export const MAX_OBSERVATION_CHARS = 1_000_000;

/**
 * The first messages of an episode, as `reset` returns them (in process) and `POST /v1/episodes` answers
 * them (over HTTP): at least one, {@link MAX_OBSERVATION_CHARS} characters at most together.
 */
export const EpisodeMessages = z
  .array(Message)
  .min(1)
  .refine((messages) => messages.reduce((chars, m) => chars + m.content.length, 0) <= MAX_OBSERVATION_CHARS, {
    message: `Too big: the messages hold more than ${MAX_OBSERVATION_CHARS} characters together`,
  });

/** Answer of `POST /v1/episodes` (201). */
export const CreateEpisodeResponse = z
  .object({
    episode_id: z.string().describe('Names the episode in the step and delete routes; it expires when left idle'),
    messages: EpisodeMessages.describe('The first messages (system prompt and first user message)'),
    task: JsonValue.describe('The task the episode plays (the one sent, or the one looked up by split and index)'),
  })
  .meta({ id: 'EnvEpisode' });
export type CreateEpisodeResponse = z.output<typeof CreateEpisodeResponse>;

/** Body of `POST /v1/episodes/:id/step`. */
export const StepRequest = z
  .object({ action: z.string().max(MAX_ACTION_CHARS).describe("The policy's text, as it wrote it (the environment parses it)") })
  .strict()
  .meta({ id: 'EnvStep' });
export type StepRequest = z.output<typeof StepRequest>;

/** The fields of a step's answer, in both its forms: over HTTP ({@link StepResponse}) and in process ({@link StepResultSchema}). */
const observation = z.string().max(MAX_OBSERVATION_CHARS);
const observationRole = z.enum(['user', 'tool']);
const reward = z.number();
const done = z.boolean();

/** Answer of `POST /v1/episodes/:id/step`: the protocol's form of a {@link StepResult}. */
export const StepResponse = z
  .object({
    observation,
    observation_role: observationRole.default('user'),
    reward,
    done,
    info: JsonObject,
  })
  .meta({ id: 'EnvStepResult' });
export type StepResponse = z.output<typeof StepResponse>;

/**
 * A {@link StepResult} as an environment running in the host's process returned it, checked with the
 * fields of {@link StepResponse}: a local and a remote environment that answer a step with the same
 * fault are refused with the same words ({@link parseAnswer}). A missing observation is empty and a
 * missing `info` is `{}`; `info` is copied as JSON (so it can be stored and sent as it is).
 */
export const StepResultSchema = z.object({
  observation: observation.default(''),
  observationRole: observationRole.optional(),
  reward,
  done,
  info: JsonObject.default({}).transform((info, ctx) => {
    try {
      return JSON.parse(JSON.stringify(info)) as JsonObject;
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `not JSON (${(error as Error).message})` });
      return z.NEVER;
    }
  }),
});

/**
 * Body of every 4xx/5xx answer. `code` is stable (`ENV_EPISODE_CLOSED`, `ENV_CAPACITY`, …; see
 * {@link EnvironmentErrorCode}); `field` names the request field at fault, when there is one.
 */
export const ProtocolError = z
  .object({
    statusCode: z.number().int(),
    code: z.string().meta({ example: 'ENV_STEP_AFTER_DONE' }),
    message: z.string(),
    field: z.string().optional(),
  })
  .meta({ id: 'EnvProtocolError' });
export type ProtocolError = z.output<typeof ProtocolError>;

/** The first problem zod found, as the dotted path of the field at fault (an unknown key included) and a message. */
export function firstIssue(error: z.ZodError): { field: string | undefined; message: string } {
  const issue = error.issues[0];
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const field = [...path, issue.keys[0]].join('.');
    return { field, message: `Unknown field ${field}` };
  }
  const field = path.join('.') || undefined;
  return { field, message: `${field ?? 'body'}: ${issue.message}` };
}

/**
 * A request checked with its schema: the schema's output (defaults filled in), or `ENV_BAD_REQUEST`
 * naming the field, which protocol servers answer with 400.
 *
 * @example
 * ```ts
 * const { action } = parseRequest(StepRequest, request.body);
 * ```
 */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { field, message } = firstIssue(parsed.error);
  throw new EnvironmentError('ENV_BAD_REQUEST', message, field);
}

/** The first messages in the shape `POST /v1/episodes` answers them in, so both forms are refused in the same words. */
const ResetAnswer = z.object({ messages: EpisodeMessages });

/**
 * What an environment running in the host's process answered, checked as a remote environment's answer
 * is ({@link parseAnswer}, the same schemas): `reset`'s messages, then each step's {@link StepResult}.
 * `where` names the call (`reset`, `step`).
 *
 * @example
 * ```ts
 * const messages = parseResetAnswer(await episode.reset(task, seed), 'reset');
 * const result = parseStepAnswer(await episode.step(action), 'step'); // NaN reward: ENV_UNAVAILABLE "step: … (reward: …)"
 * ```
 */
export function parseResetAnswer(value: unknown, where: string): Message[] {
  return parseAnswer(ResetAnswer, { messages: value }, where).messages;
}

/** See {@link parseResetAnswer}. */
export function parseStepAnswer(value: unknown, where: string): StepResult {
  return parseAnswer(StepResultSchema, value, where);
}

/**
 * A server's answer checked with its schema. An answer that does not fit is `ENV_UNAVAILABLE` (the
 * server does not speak the protocol), naming the field, never a failure deep in whatever uses it; the
 * message names the field and what was expected, never the value sent.
 */
export function parseAnswer<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { field, message } = firstIssue(parsed.error);
  throw new EnvironmentError('ENV_UNAVAILABLE', `${where}: the answer does not fit the protocol (${message})`, field);
}
