import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { ChatService, type ServedModel } from './chat.service';
import type { UsageDto } from './chat.dto';
import { completionParams, type CompletionRequestBody, type ParsedCompletion } from './completion-request';
import type { CompletionChunkDto, CompletionDto, CompletionLogprobsDto } from './completion.dto';
import { ModelPoolService } from './model-pool.service';
import type { CompletionChoice, CompletionResult, PromptTokenLogprob, TokenLogprob } from '../rollout/sampling-schemas';

/** A validated completion request bound to its model: everything checked before any answer is sent. */
export interface PreparedCompletion {
  parsed: ParsedCompletion;
  model: ServedModel;
  id: string;
  created: number;
}

/** OpenAI's legacy completions (`text_completion`) over the models chat serves, in the same model server processes. */
@Injectable()
export class CompletionsService {
  constructor(
    private readonly chat: ChatService,
    private readonly pool: ModelPoolService,
  ) {}

  /** Checks the request and finds the model (errors here are plain HTTP errors, before any stream starts). */
  async prepare(caller: Principal, body: CompletionRequestBody): Promise<PreparedCompletion> {
    const parsed = completionParams(body);
    const model = await this.chat.resolve(caller, parsed.model);
    return { parsed, model, id: `cmpl-${randomBytes(12).toString('hex')}`, created: Math.floor(Date.now() / 1000) };
  }

  async complete(p: PreparedCompletion): Promise<CompletionDto> {
    const result = await this.pool.generate(p.model.dir, p.parsed.request);
    return {
      id: p.id,
      object: 'text_completion',
      created: p.created,
      model: p.model.id,
      choices: result.choices.map((c, index) => ({
        index,
        text: (c.echo?.text ?? '') + c.text,
        logprobs: p.parsed.logprobs === null ? null : legacyLogprobs(c),
        finish_reason: c.finishReason,
      })),
      usage: usageOf(result),
    };
  }

  /** Waits until the model is loaded, so a stream answers load failures with a real HTTP status. */
  async load(p: PreparedCompletion): Promise<void> {
    await this.pool.load(p.model.dir);
  }

  /**
   * Streams `text_completion` chunks: text as the model produces it (the echoed prompt first), then a
   * finishing chunk per choice with its `finish_reason` and its log-probs whole, and a usage chunk
   * when `stream_options.include_usage` asked.
   */
  async stream(p: PreparedCompletion, emit: (chunk: CompletionChunkDto) => void): Promise<void> {
    const chunk = (choices: CompletionChunkDto['choices'], usage?: UsageDto | null): CompletionChunkDto => ({
      id: p.id,
      object: 'text_completion',
      created: p.created,
      model: p.model.id,
      choices,
      ...(p.parsed.includeUsage ? { usage: usage ?? null } : {}),
    });
    const result = await this.pool.generate(p.model.dir, p.parsed.request, (index, text) => {
      if (text.length > 0) emit(chunk([{ index, text, logprobs: null, finish_reason: null }]));
    });
    result.choices.forEach((c, index) => emit(chunk([{ index, text: '', logprobs: p.parsed.logprobs === null ? null : legacyLogprobs(c), finish_reason: c.finishReason }])));
    if (p.parsed.includeUsage) emit(chunk([], usageOf(result)));
  }
}

/**
 * OpenAI's legacy log-probs of a choice: the echoed prompt's tokens (the first without a log-prob),
 * then the sampled ones; `top_logprobs` maps the most likely tokens at each place, and the token that
 * is there, to their log-probs; `text_offset` is where each token's text starts in the choice's text.
 */
export function legacyLogprobs(c: CompletionChoice): CompletionLogprobsDto {
  const entries: PromptTokenLogprob[] = [...(c.echo?.logprobs ?? []), ...(c.logprobs ?? []).map((t: TokenLogprob) => ({ ...t, top: t.top }))];
  const out: CompletionLogprobsDto = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = 0;
  entries.forEach((e, i) => {
    // Sampled tokens start after the echoed prompt's text, whatever its tokens decode to one by one.
    if (i === (c.echo?.logprobs?.length ?? 0)) offset = c.echo?.text.length ?? 0;
    out.tokens.push(e.token);
    out.token_logprobs.push(e.logprob);
    out.top_logprobs.push(
      e.logprob === null || e.top === null
        ? null
        : Object.fromEntries([...e.top.map((a) => [a.token, a.logprob] as const), ...(e.top.some((a) => a.token === e.token) ? [] : [[e.token, e.logprob] as const])]),
    );
    out.text_offset.push(offset);
    offset += e.token.length;
  });
  return out;
}

function usageOf(result: CompletionResult): UsageDto {
  const completion = result.choices.reduce((a, c) => a + c.completionTokens, 0);
  return { prompt_tokens: result.promptTokens, completion_tokens: completion, total_tokens: result.promptTokens + completion };
}
