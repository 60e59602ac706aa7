import { parseOrThrow } from '../core/zod-error';
import { ChatCompletionRequestDto, chatParams } from './chat-request';
import { checkpointModelId, parseModelName } from './model-names';

const ID = '4f0c8b1e-7d7a-4c1e-9a57-2b1f0e6c9d00';

/** What the route does with a body: its pipe parses it with the request schema, the service maps it. */
const parseChatRequest = (body: unknown) => chatParams(parseOrThrow(ChatCompletionRequestDto, body));

describe('model names', () => {
  it('reads job ids, steps, names and the job: prefix', () => {
    expect(parseModelName(ID)).toEqual({ by: 'id', ref: ID, step: null });
    expect(parseModelName(`${ID.toUpperCase()}/step-20`)).toEqual({ by: 'id', ref: ID, step: 20 });
    expect(parseModelName(`job:${ID}/step-0`)).toEqual({ by: 'id', ref: ID, step: 0 });
    expect(parseModelName('math-grpo')).toEqual({ by: 'name', ref: 'math-grpo', step: null });
    expect(parseModelName('math-grpo/step-3')).toEqual({ by: 'name', ref: 'math-grpo', step: 3 });
    // Not a step suffix: the whole string is a name (looked up in the database, never on disk).
    expect(parseModelName('x/step-03')).toEqual({ by: 'name', ref: 'x/step-03', step: null });
    expect(parseModelName('')).toBeNull();
    expect(parseModelName('  ')).toBeNull();
    expect(parseModelName('n'.repeat(129))).toBeNull();
    expect(checkpointModelId(ID, 4)).toBe(`job:${ID}/step-4`);
  });
});

describe('chat request', () => {
  const base = { model: ID, messages: [{ role: 'user', content: 'hi' }] };

  it('maps OpenAI fields to the sampler’s', () => {
    const p = parseChatRequest({
      ...base,
      messages: [
        { role: 'developer', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'assistant', content: null },
      ],
      temperature: 0,
      top_p: 0.9,
      max_completion_tokens: 7,
      stop: 'END',
      seed: 42,
      n: 3,
      logprobs: true,
      top_logprobs: 4,
      stream: true,
      stream_options: { include_usage: true },
      presence_penalty: 0,
      user: 'u1',
    });
    expect(p).toEqual({
      model: ID,
      stream: true,
      includeUsage: true,
      generate: {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'ab' },
          { role: 'assistant', content: '' },
        ],
        n: 3,
        temperature: 0,
        topP: 0.9,
        maxTokens: 7,
        stop: ['END'],
        seed: 42,
        logprobs: true,
        topLogprobs: 4,
        stream: true,
      },
    });
  });

  it('fills defaults: one choice, temperature 1, a fresh seed, no limit but the context', () => {
    const a = parseChatRequest(base).generate;
    expect(a).toMatchObject({ n: 1, temperature: 1, topP: 1, stop: [], logprobs: false, stream: false });
    expect(a.maxTokens).toBeUndefined();
    expect(Number.isInteger(a.seed)).toBe(true);
    expect(parseChatRequest({ ...base, max_tokens: 3 }).generate.maxTokens).toBe(3);
  });

  it('refuses what it cannot honour, naming the field', () => {
    const field = (body: unknown) => {
      try {
        parseChatRequest(body);
      } catch (e) {
        return (e as { field?: string }).field;
      }
      return 'accepted';
    };
    expect(field({ ...base, n: 9 })).toBe('n');
    expect(field({ ...base, temperature: 2.5 })).toBe('temperature');
    expect(field({ ...base, top_p: 0 })).toBe('top_p');
    expect(field({ ...base, top_logprobs: 2 })).toBe('top_logprobs');
    expect(field({ ...base, logprobs: true, top_logprobs: 21 })).toBe('top_logprobs');
    expect(field({ ...base, logprobs: true, top_logprobs: 20 })).toBe('accepted');
    expect(field({ ...base, top_logprobs: 0 })).toBe('accepted');
    expect(field({ ...base, frequency_penalty: 0.5 })).toBe('frequency_penalty');
    expect(field({ ...base, tools: [] })).toBe('tools');
    expect(field({ ...base, messages: [] })).toBe('messages');
    expect(field({ ...base, messages: [{ role: 'wizard', content: 'x' }] })).toBe('messages.0.role');
    expect(field({ ...base, messages: [{ role: 'user', content: null }] })).toBe('messages.0.content');
    expect(field({ ...base, max_tokens: 3, max_completion_tokens: 4 })).toBe('max_completion_tokens');
    expect(field({ ...base, stop: Array(17).fill('x') })).toBe('stop');
    expect(field([])).toBe('body');
    expect(field({ messages: base.messages })).toBe('model');
  });
});
