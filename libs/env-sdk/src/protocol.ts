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
import type { JsonObject, JsonValue, Message } from './messages';

export const PROTOCOL_VERSION = '1';

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

export interface TasksResponse {
  split: 'train' | 'test';
  offset: number;
  total: number | null;
  tasks: JsonValue[];
}

export interface CreateEpisodeRequest {
  /** The task itself, or `split` + `index` of one of the server's tasks. */
  task?: JsonValue;
  split?: 'train' | 'test';
  index?: number;
  seed: number;
  /** Overrides of the server's default config for this episode. */
  config?: JsonObject;
}

export interface CreateEpisodeResponse {
  episode_id: string;
  messages: Message[];
  task: JsonValue;
}

export interface StepRequest {
  action: string;
}

export interface StepResponse {
  observation: string;
  observation_role: 'user' | 'tool';
  reward: number;
  done: boolean;
  info: JsonObject;
}

export interface ProtocolError {
  statusCode: number;
  code: string;
  message: string;
  field?: string;
}
