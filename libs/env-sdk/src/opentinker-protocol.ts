import { z } from 'zod';
import { JsonObject, JsonValue } from './messages';
import { MAX_ACTION_CHARS } from './protocol';

/**
 * OpenTinker's game-server protocol (`opentinker/environment/base_game_server.py`), as zod schemas; each
 * type is the schema's output. A game server is FastAPI + uvicorn; `--shards N` runs N single-worker
 * processes on consecutive ports. `OpenTinkerEnvironment` checks a server's answers with these schemas,
 * and `opentinker env serve --protocol opentinker` checks the requests it gets with them.
 *
 * - `GET /health` → {@link OpenTinkerHealth}
 * - `POST /reset` {@link OpenTinkerResetRequest} → {@link OpenTinkerResetResponse}; a second reset of
 *   an instance id resets the same game
 * - `POST /step` {@link OpenTinkerStepRequest} → {@link OpenTinkerStepResponse}; 404 for an instance
 *   that was never reset
 * - `POST /finalize` {@link OpenTinkerFinalizeRequest} → `{ message }` (frees the instance; unknown ids
 *   are ignored)
 * - `GET /stats?job_id=`, `GET /stats/step?job_id=`, `POST /stats/reset?job_id=`,
 *   `POST /stats/reset_all?job_id=` ({@link OpenTinkerStatsQuery})
 * Errors are FastAPI's: `{ detail }` with 404 or 422, a plain-text 500 when the game raised.
 *
 * Requests are read as upstream's pydantic models read them: keys they do not name are ignored, and
 * `instance_id` and `job_id` default to `default`.
 */

/** Longest instance or job id a server takes. */
const MAX_ID_CHARS = 256;
const Id = z.string().min(1).max(MAX_ID_CHARS).default('default');

/** `GET /health`: `healthy` from upstream's servers (`ok` is taken too). */
export const OpenTinkerHealth = z.object({ status: z.enum(['healthy', 'ok']) });

/**
 * Body of `/reset`. `task` is the task itself; `split` + `index` one of the environment's tasks; with
 * neither, the other keys are the task (upstream's env kwargs, e.g. math's `prompt` and `ground_truth`).
 * `seed` and `config` (the per-episode config) are this project's additions.
 */
export const OpenTinkerResetRequest = z.looseObject({
  instance_id: Id,
  job_id: Id,
  task: JsonValue.optional(),
  split: z.enum(['train', 'test']).optional(),
  index: z.number().int().min(0).optional(),
  seed: z.number().int().optional(),
  config: JsonObject.optional(),
});
export type OpenTinkerResetRequest = z.output<typeof OpenTinkerResetRequest>;

/** The keys of a reset body that steer the episode; every other key is an env kwarg. */
export const OPENTINKER_RESET_KEYS: ReadonlySet<string> = new Set(Object.keys(OpenTinkerResetRequest.shape));

export const OpenTinkerResetResponse = z.object({
  observation: z.string(),
  system_prompt: z.string().nullable().optional(),
  game_state: JsonObject.nullable().optional(),
});
export type OpenTinkerResetResponse = z.output<typeof OpenTinkerResetResponse>;

/** Body of `/step`: the model's text as `action` (empty when left out, as upstream's default). */
export const OpenTinkerStepRequest = z.object({ instance_id: Id, job_id: Id, action: z.string().max(MAX_ACTION_CHARS).default('') });
export type OpenTinkerStepRequest = z.output<typeof OpenTinkerStepRequest>;

export const OpenTinkerStepResponse = z.object({
  observation: z.string().default(''),
  reward: z.number(),
  done: z.boolean(),
  info: JsonObject.default({}),
});
export type OpenTinkerStepResponse = z.output<typeof OpenTinkerStepResponse>;

export const OpenTinkerFinalizeRequest = z.object({ instance_id: Id, job_id: Id });
export type OpenTinkerFinalizeRequest = z.output<typeof OpenTinkerFinalizeRequest>;

/** The query of the statistics routes: the job whose statistics (`default` when left out). */
export const OpenTinkerStatsQuery = z.object({ job_id: z.string().min(1).max(MAX_ID_CHARS).optional() });
