/**
 * The HTTP environment protocol (JSON, versioned under `/v1`), as types. Any language can implement
 * it; `opentinker env serve` serves it for any environment package, and {@link RemoteEnvironment}
 * consumes it.
 *
 * - `GET /health` → `{ status: 'ok' }`
 * - `GET /v1/info` → {@link InfoResponse}
 * - `GET /v1/tasks?split=train|test&offset=0&limit=100` → {@link TasksResponse}
 * - `POST /v1/episodes` {@link CreateEpisodeRequest} → {@link CreateEpisodeResponse}
 * - `POST /v1/episodes/:id/step` {@link StepRequest} → {@link StepResponse}
 * - `DELETE /v1/episodes/:id` → 204
 * Errors: status 4xx/5xx with {@link ProtocolError}.
 */
// Imported for the {@link} references in the docs below.
// eslint-disable-next-line @typescript-eslint/no-unused-vars
import type { EnvironmentErrorCode } from './errors';
// eslint-disable-next-line @typescript-eslint/no-unused-vars
import type { StepResult } from './environment';
import type { JsonObject, JsonValue, Message } from './messages';

/** The protocol version this SDK speaks; servers report theirs in {@link InfoResponse.protocol_version}. */
export const PROTOCOL_VERSION = '1';

/** `GET /v1/info`: what the server serves. */
export interface InfoResponse {
  id: string;
  version: string;
  protocol_version: string;
  description: string;
  turn_mode: 'single' | 'multi';
  task_source: 'dataset' | 'generator';
  /** JSON Schema of the per-episode config. */
  config_schema: Record<string, unknown>;
  /** The server's default config, with defaults filled in. */
  config: JsonObject;
  /** Task counts under the default config; null means endless. */
  tasks: { train: number | null; test: number | null };
}

/** `GET /v1/tasks?split&offset&limit`: one page of a split's tasks. */
export interface TasksResponse {
  split: 'train' | 'test';
  /** Index of `tasks[0]` in the split. */
  offset: number;
  /** Tasks in the split; null for an endless generator. */
  total: number | null;
  tasks: JsonValue[];
}

/** Body of `POST /v1/episodes`: starts an episode. */
export interface CreateEpisodeRequest {
  /** The task itself, or `split` + `index` of one of the server's tasks. */
  task?: JsonValue;
  split?: 'train' | 'test';
  index?: number;
  seed: number;
  /** Overrides of the server's default config for this episode. */
  config?: JsonObject;
}

/** Answer of `POST /v1/episodes` (201). */
export interface CreateEpisodeResponse {
  /** Names the episode in the step and delete routes; it expires when left idle. */
  episode_id: string;
  /** The first messages (system prompt and first user message). */
  messages: Message[];
  /** The task the episode plays (the one sent, or the one looked up by split and index). */
  task: JsonValue;
}

/** Body of `POST /v1/episodes/:id/step`. */
export interface StepRequest {
  /** The policy's text, as it wrote it (the environment parses it). */
  action: string;
}

/** Answer of `POST /v1/episodes/:id/step`: the protocol's form of a {@link StepResult}. */
export interface StepResponse {
  observation: string;
  observation_role: 'user' | 'tool';
  reward: number;
  done: boolean;
  info: JsonObject;
}

/**
 * Body of every 4xx/5xx answer. `code` is stable (`ENV_EPISODE_CLOSED`, `ENV_CAPACITY`, …; see
 * {@link EnvironmentErrorCode}); `field` names the request field at fault, when there is one.
 */
export interface ProtocolError {
  statusCode: number;
  code: string;
  message: string;
  field?: string;
}
