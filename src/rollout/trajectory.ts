import type { JsonObject, Message } from '@opentinker/env-sdk';

/**
 * One episode as the agent loop recorded it: token in, token out. `promptIds` are the rendered first
 * messages; `responseIds` are everything after them, policy tokens and environment tokens interleaved
 * exactly as the model saw them. The trainer trains on these ids (never a re-tokenisation), with
 * `lossMask` keeping environment tokens out of the loss.
 */
export interface Trajectory {
  /** Index of the task in its split. */
  taskIndex: number;
  /** Which task of the batch this episode belongs to: the group id (verl's `uid`) for GRPO-style estimators. */
  group: number;
  /** Which of the task's `rollout_n` samples this is. */
  sample: number;
  promptIds: number[];
  responseIds: number[];
  /** 1 where `responseIds[i]` was sampled from the policy, 0 for environment / template tokens. */
  lossMask: Uint8Array;
  /** Log-prob of `responseIds[i]` under the sampling policy (temperature 1, no filtering); 0 where the mask is 0. */
  oldLogProbs: Float32Array;
  /** Index in `responseIds` of the last policy token of each model turn (where each turn's reward lands). */
  turnEnds: number[];
  /** The environment's reward after each model turn (same length as `turnEnds`). */
  turnRewards: number[];
  /** Sum of `turnRewards`. */
  reward: number;
  /** Why the episode ended. */
  finish: 'done' | 'max_turns' | 'length' | 'env_error' | 'cancelled';
  /** The conversation: the first messages, then each model turn and each observation, as text. */
  messages: Message[];
  /** The `info` of the environment's last step (e.g. math's `correct`, gomoku's `winner`). */
  info: JsonObject;
  /** Tokens the policy generated (sum of the mask). */
  generatedTokens: number;
  /** The environment's error when `finish` is `env_error` (after retries). */
  error?: string;
}
