import { Message } from '@opentinker/env-sdk';
import { z } from 'zod';

/**
 * What a model is asked to sample and what it answers, as zod schemas (each type is the schema's output):
 * chat generation (`generation.ts`) and text completion (`text-completion.ts`) take and return these, and
 * a model server and the API check them where they cross the process boundary (`serving/model-protocol.ts`).
 */

// Shapes only: the HTTP edge (chat-request.ts, completion-request.ts) checks the values, and the model
// server refuses what the model cannot do (a token id outside its vocabulary) naming the request's field.
const count = z.number().int();
const bytes = z.array(z.number().int());

/** One token as OpenAI reports it. */
export const TokenAlternativeLogprob = z.object({
  token: z.string(),
  logprob: z.number(),
  /** UTF-8 bytes of the token (a token may hold part of a character). */
  bytes,
});
export type TokenAlternativeLogprob = z.output<typeof TokenAlternativeLogprob>;

/** One sampled token as OpenAI reports it, with the most likely tokens at its place when asked (`top_logprobs`): most likely first, empty unless asked. */
export const TokenLogprob = TokenAlternativeLogprob.extend({ top: z.array(TokenAlternativeLogprob) });
export type TokenLogprob = z.output<typeof TokenLogprob>;

/** How to sample the choices of one prompt (a chat's rendered messages, or a completion's prompt). */
const sampleFields = {
  n: count,
  /** 0 = greedy. */
  temperature: z.number(),
  topP: z.number(),
  /** Most new tokens per choice; default: what the context leaves after the prompt. */
  maxTokens: count.optional(),
  stop: z.array(z.string()),
  seed: z.number().int(),
  logprobs: z.boolean(),
  /** With `logprobs`: also this many most likely tokens at each place (default 0). */
  topLogprobs: count.optional(),
  /** Send deltas as text becomes final. */
  stream: z.boolean(),
};

/** A chat request: `messages` rendered with the model's chat template. */
export const GenerateRequest = z.object({ messages: z.array(Message), ...sampleFields });
export type GenerateRequest = z.output<typeof GenerateRequest>;

export type SampleRequest = Omit<GenerateRequest, 'messages'>;

export const GeneratedChoice = z.object({
  text: z.string(),
  finishReason: z.enum(['stop', 'length']),
  /** Tokens sampled for this choice (a stop token included). */
  completionTokens: count,
  logprobs: z.array(TokenLogprob).nullable(),
});
export type GeneratedChoice = z.output<typeof GeneratedChoice>;

export const GenerateResult = z.object({ promptTokens: count, choices: z.array(GeneratedChoice) });
export type GenerateResult = z.output<typeof GenerateResult>;

/** Why a request failed inside a model server: `invalid` and `context_length` are the caller's fault. */
export const GenerateErrorKind = z.enum(['invalid', 'context_length', 'internal']);
export type GenerateErrorKind = z.output<typeof GenerateErrorKind>;

/** One prompt of a completion request: text (tokenized as Hugging Face's tokenizers do, special tokens added) or token ids. */
export const CompletionPrompt = z.union([z.object({ text: z.string() }), z.object({ ids: z.array(z.number()) })]);
export type CompletionPrompt = z.output<typeof CompletionPrompt>;

/** What a model server samples for `POST /v1/completions`: `n` choices of each prompt, choice `p·n + j`. */
export const CompletionRequest = z.object({
  ...sampleFields,
  kind: z.literal('completion'),
  prompts: z.array(CompletionPrompt),
  /** New tokens per choice; 0 samples nothing (with `echo`, the prompt is scored). */
  maxTokens: count,
  /** Put the prompt before each choice's text (and, with `logprobs`, its tokens' log-probs before the sampled ones). */
  echo: z.boolean(),
});
export type CompletionRequest = z.output<typeof CompletionRequest>;

/** A prompt token: the first one has no log-prob (nothing before it), hence null. */
export const PromptTokenLogprob = z.object({
  token: z.string(),
  logprob: z.number().nullable(),
  bytes,
  top: z.array(TokenAlternativeLogprob).nullable(),
});
export type PromptTokenLogprob = z.output<typeof PromptTokenLogprob>;

export const CompletionChoice = GeneratedChoice.extend({
  /** With `echo`: the prompt's text and, with `logprobs`, its tokens. */
  echo: z.object({ text: z.string(), logprobs: z.array(PromptTokenLogprob).nullable() }).nullable(),
});
export type CompletionChoice = z.output<typeof CompletionChoice>;

export const CompletionResult = z.object({
  /** Prompt tokens over all prompts. */
  promptTokens: count,
  choices: z.array(CompletionChoice),
});
export type CompletionResult = z.output<typeof CompletionResult>;
