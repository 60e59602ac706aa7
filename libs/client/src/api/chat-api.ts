import { OpenTinkerError } from '../errors';
import { SseParser } from '../sse-parser';
import type { Transport } from '../transport';
import type { ChatChunk, ChatCompletion, ChatRequest, ModelList } from '../types';
import type { RequestOptions } from './request-options';

/**
 * OpenAI-compatible chat over your jobs' checkpoints (`POST /v1/chat/completions`, `GET /v1/models`).
 * `model` is `job:<job id>` (latest checkpoint), `job:<job id>/step-<n>`, a job name unique among your jobs, `model:<id>` (an uploaded model) or `hf:Org/Name`.
 * Never retried: a second attempt would sample again.
 *
 * @example
 * ```ts
 * const answer = await client.chat.create({ model: jobId, messages: [{ role: 'user', content: '12+30=' }], temperature: 0 });
 * console.log(answer.choices[0].message.content);
 * for await (const chunk of client.chat.stream({ model: jobId, messages })) process.stdout.write(chunk.choices[0]?.delta.content ?? '');
 * ```
 */
export class ChatApi {
  constructor(private readonly t: Transport) {}

  /** One answer (or `n`), whole. */
  create(request: ChatRequest, options: RequestOptions = {}): Promise<ChatCompletion> {
    return this.t.call(this.t.api.POST('/v1/chat/completions', { body: { ...request, stream: false }, signal: options.signal }), options.signal) as Promise<ChatCompletion>;
  }

  /**
   * The answer as it is sampled: OpenAI's `chat.completion.chunk`s (a role chunk, content deltas, a
   * chunk with `finish_reason`; with `stream_options.include_usage`, a last chunk with `usage`). An
   * error the server reports mid-stream is thrown as an {@link OpenTinkerError}.
   */
  async *stream(request: ChatRequest, options: RequestOptions = {}): AsyncGenerator<ChatChunk, void, undefined> {
    const { data } = await this.t.send(
      this.t.api.POST('/v1/chat/completions', {
        body: { ...request, stream: true },
        headers: { Accept: 'text/event-stream' },
        parseAs: 'stream',
        signal: options.signal,
      }),
      options.signal,
    );
    if (!data) throw new OpenTinkerError('OT_ERR_BAD_RESPONSE', 'The chat stream came back without a body', 200);
    const reader = (data as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) throw new OpenTinkerError('OT_ERR_BAD_RESPONSE', 'The chat stream ended before [DONE]', 200);
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          if (message.data === '[DONE]') return;
          const parsed = JSON.parse(message.data) as ChatChunk | { code: string; message: string; statusCode: number; field?: string };
          if ('code' in parsed && 'statusCode' in parsed) {
            throw new OpenTinkerError(parsed.code as never, parsed.message, parsed.statusCode, { field: parsed.field });
          }
          yield parsed as ChatChunk;
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** The checkpoints you can chat with (`id` is what `model` takes). */
  models(options: RequestOptions = {}): Promise<ModelList> {
    return this.t.call(this.t.api.GET('/v1/models', { signal: options.signal }), options.signal);
  }
}
