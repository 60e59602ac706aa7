import type { FastifyReply } from 'fastify';
import type { HostPaths } from '../core/host-paths';
import { mapError } from '../core/error.filter';
import { openEventStream } from '../core/event-stream-reply';
import { openAiErrorBody } from './openai-error.filter';

/**
 * Answers with OpenAI's stream: `data: <chunk>` events as `produce` emits them, then `data: [DONE]`.
 * Headers are gone once the first event is out, so an error then travels as an event with the error
 * body (ours and OpenAI's `error`, the server's folders named as in every error answer), the way
 * OpenAI-compatible servers send it, before `[DONE]`.
 */
export async function sendOpenAiStream(reply: FastifyReply, hostPaths: HostPaths, produce: (emit: (chunk: unknown) => void) => Promise<void>): Promise<void> {
  const events = openEventStream(reply);
  const write = (data: string) => events.write(`data: ${data}\n\n`);
  try {
    await produce((chunk) => write(JSON.stringify(chunk)));
  } catch (error) {
    write(JSON.stringify(openAiErrorBody(mapError(error, hostPaths).body)));
  }
  write('[DONE]');
  events.end();
}
