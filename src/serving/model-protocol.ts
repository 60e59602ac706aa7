import type { EngineSettings } from '@opentinker/engine/settings';
import type { GenerateErrorKind, GenerateRequest, GenerateResult, TokenLogprob } from '../rollout/generation';
import type { CompletionRequest, CompletionResult } from '../rollout/text-completion';

/** What a model server answers: a chat (`messages`, rendered with the chat template) or a completion (`kind: 'completion'`, prompts as they are). */
export type ModelRequest = GenerateRequest | CompletionRequest;

export function isCompletionRequest(request: ModelRequest): request is CompletionRequest {
  return (request as CompletionRequest).kind === 'completion';
}

/** The answer to a {@link ModelRequest}, by its kind. */
export type ModelResult<R extends ModelRequest = ModelRequest> = R extends CompletionRequest ? CompletionResult : GenerateResult;

/**
 * Messages between the API process and a model server child process (Node IPC, JSON). One child holds
 * one checkpoint; the API sends it one request at a time.
 */

export type ToModelServer =
  { type: 'load'; dir: string; jobsDir: string; modelRoots: string[]; home: string; engine?: EngineSettings } | { type: 'generate'; id: number; request: ModelRequest };

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
  | { type: 'result'; id: number; result: ModelResult }
  | { type: 'error'; id: number; kind: GenerateErrorKind; message: string; field?: string };
