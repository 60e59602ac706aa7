import type { EngineSettings } from '@opentinker/engine/settings';
import type { GenerateErrorKind, GenerateRequest, GenerateResult, TokenLogprob } from '../training/generation';

/**
 * Messages between the API process and a model server child process (Node IPC, JSON). One child holds
 * one checkpoint; the API sends it one request at a time.
 */

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
