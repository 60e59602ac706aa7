import { z } from 'zod';
import { EngineSettingsMessage } from '../runner/engine-settings-message';
import { CompletionRequest, CompletionResult, GenerateErrorKind, GenerateRequest, GenerateResult, TokenLogprob } from '../rollout/sampling-schemas';

/**
 * Messages between the API process and a model server child process (Node IPC, JSON), as zod schemas
 * that each side parses on receipt. One child holds one checkpoint; the API sends it one request at a time.
 */

/** What a model server answers: a chat (`messages`, rendered with the chat template) or a completion (`kind: 'completion'`, prompts as they are). */
export const ModelRequest = z.union([CompletionRequest, GenerateRequest]);
export type ModelRequest = z.output<typeof ModelRequest>;

export function isCompletionRequest(request: ModelRequest): request is CompletionRequest {
  return 'kind' in request && request.kind === 'completion';
}

/** The answer to a {@link ModelRequest}, by its kind. */
export type ModelResult<R extends ModelRequest = ModelRequest> = R extends CompletionRequest ? CompletionResult : GenerateResult;

/** API → model server. */
export const ToModelServer = z.discriminatedUnion('type', [
  z.object({ type: z.literal('load'), dir: z.string(), jobsDir: z.string(), modelRoots: z.array(z.string()), home: z.string(), engine: EngineSettingsMessage.optional() }),
  z.object({ type: z.literal('generate'), id: z.number().int(), request: ModelRequest }),
]);
export type ToModelServer = z.output<typeof ToModelServer>;

export const DeltaMessage = z.object({
  type: z.literal('delta'),
  id: z.number().int(),
  index: z.number().int(),
  text: z.string(),
  logprobs: z.array(TokenLogprob).nullable(),
});
export type DeltaMessage = z.output<typeof DeltaMessage>;

/** Model server → API. */
export const FromModelServer = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), contextLength: z.number().int(), source: z.string() }),
  z.object({ type: z.literal('load_failed'), message: z.string() }),
  DeltaMessage,
  // A completion's result has `echo` on every choice; a chat's has none.
  z.object({ type: z.literal('result'), id: z.number().int(), result: z.union([CompletionResult, GenerateResult]) }),
  z.object({ type: z.literal('error'), id: z.number().int(), kind: GenerateErrorKind, message: z.string(), field: z.string().optional() }),
]);
export type FromModelServer = z.output<typeof FromModelServer>;
