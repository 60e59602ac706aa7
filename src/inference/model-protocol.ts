import type { EngineSettings } from '@opentinker/engine/settings';
import type { Message } from '@opentinker/env-sdk';

/**
 * Messages between the API process and a model server child process (Node IPC, JSON). One child holds
 * one checkpoint; the API sends it one request at a time.
 */

/** One sampled token as OpenAI reports it. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** UTF-8 bytes of the token (a token may hold part of a character). */
  bytes: number[];
}

export interface GenerateRequest {
  messages: Message[];
  n: number;
  /** 0 = greedy. */
  temperature: number;
  topP: number;
  /** Most new tokens per choice; default: what the context leaves after the prompt. */
  maxTokens?: number;
  stop: string[];
  seed: number;
  logprobs: boolean;
  /** Send {@link DeltaMessage}s as text becomes final. */
  stream: boolean;
}

export interface GeneratedChoice {
  text: string;
  finishReason: 'stop' | 'length';
  /** Tokens sampled for this choice (a stop token included). */
  completionTokens: number;
  logprobs: TokenLogprob[] | null;
}

export interface GenerateResult {
  promptTokens: number;
  choices: GeneratedChoice[];
}

/** Why a request failed inside the child: `invalid` and `context_length` are the caller's fault. */
export type GenerateErrorKind = 'invalid' | 'context_length' | 'internal';

export type ToModelServer =
  { type: 'load'; dir: string; jobsDir: string; modelRoots: string[]; home: string; engine?: EngineSettings } | { type: 'generate'; id: number; request: GenerateRequest };

export interface DeltaMessage {
  type: 'delta';
  id: number;
  index: number;
  text: string;
  logprobs: TokenLogprob[] | null;
}

export type FromModelServer =
  | { type: 'ready'; contextLength: number; source: string }
  | { type: 'load_failed'; message: string }
  | DeltaMessage
  | { type: 'result'; id: number; result: GenerateResult }
  | { type: 'error'; id: number; kind: GenerateErrorKind; message: string; field?: string };
