import { AppError } from '../core/app-error';
import { parseOrThrow } from '../core/zod-error';
import { CompletionRequestDto, completionParams } from './completion-request';

/** What the route does with a body: its pipe parses it with the request schema, the service maps it. */
const parse = (body: unknown) => completionParams(parseOrThrow(CompletionRequestDto, body));

describe('completion request', () => {
  const base = { model: 'job:4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00' };

  it('reads the prompt as text, token ids or a list of either', () => {
    expect(parse({ ...base, prompt: 'hi' }).request.prompts).toEqual([{ text: 'hi' }]);
    expect(parse({ ...base, prompt: ['a', 'b'] }).request.prompts).toEqual([{ text: 'a' }, { text: 'b' }]);
    expect(parse({ ...base, prompt: [1, 2, 3] }).request.prompts).toEqual([{ ids: [1, 2, 3] }]);
    expect(parse({ ...base, prompt: [[1], [2, 3]] }).request.prompts).toEqual([{ ids: [1] }, { ids: [2, 3] }]);
  });

  it('fills OpenAI’s defaults: 16 tokens, temperature 1, one choice, no log-probs, a fresh seed', () => {
    const p = parse({ ...base, prompt: 'x' });
    expect(p.request).toMatchObject({ kind: 'completion', maxTokens: 16, temperature: 1, topP: 1, n: 1, logprobs: false, topLogprobs: 0, echo: false, stop: [] });
    expect(p.logprobs).toBeNull();
    expect(Number.isInteger(p.request.seed)).toBe(true);
    expect(parse({ ...base, prompt: 'x', logprobs: 0 }).request).toMatchObject({ logprobs: true, topLogprobs: 0 });
    expect(parse({ ...base, prompt: 'x', logprobs: 5, echo: true, stop: 'END', seed: -1 }).request).toMatchObject({
      logprobs: true,
      topLogprobs: 5,
      echo: true,
      stop: ['END'],
      seed: 2 ** 32 - 1,
    });
    expect(parse({ ...base, prompt: 'x', best_of: 2, n: 2, presence_penalty: 0, logit_bias: {}, suffix: null }).request.n).toBe(2);
  });

  it('refuses what it cannot honour, naming the field', () => {
    const field = (body: Record<string, unknown>) => {
      try {
        parse({ ...base, prompt: 'x', ...body });
      } catch (e) {
        expect(e).toBeInstanceOf(AppError);
        return (e as AppError).field;
      }
      return 'accepted';
    };
    expect(field({ logprobs: 6 })).toBe('logprobs');
    expect(field({ best_of: 3 })).toBe('best_of');
    expect(field({ suffix: 'end' })).toBe('suffix');
    expect(field({ logit_bias: { '5': 1 } })).toBe('logit_bias');
    expect(field({ frequency_penalty: 1 })).toBe('frequency_penalty');
    expect(field({ prompt: [] })).toBe('prompt');
    expect(field({ prompt: [1, 'a'] })).toBe('prompt');
    expect(field({ prompt: [-1] })).toBe('prompt.0');
    expect(field({ prompt: Array(33).fill('a') })).toBe('prompt');
    expect(field({ prompt: Array(16).fill('a'), n: 8 })).toBe('n');
    expect(field({ max_tokens: -1 })).toBe('max_tokens');
    expect(field({ max_tokens: 0 })).toBe('accepted');
    expect(field({ functions: [] })).toBe('functions');
  });
});
