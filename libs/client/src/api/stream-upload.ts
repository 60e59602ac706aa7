import { OpenTinkerError } from '../errors';
import { nodePost, nodeReadable } from '../node-upload';
import type { Transport } from '../transport';

/**
 * POSTs a body read from a path, a web stream or an async iterable through `node:http` (whose
 * backpressure keeps memory flat, see node-upload.ts) and resolves with the parsed answer; a refusal
 * is thrown as {@link OpenTinkerError} with the server's code and field. Not retried: a stream cannot
 * be replayed.
 */
export async function uploadFromNode<T>(
  t: Transport,
  path: string,
  query: Record<string, string>,
  contentType: string,
  source: string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
): Promise<T> {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (t.authorization) headers.authorization = t.authorization;
  let response: Response;
  try {
    response = await nodePost(`${t.baseUrl}${path}?${new URLSearchParams(query)}`, headers, await nodeReadable(source), signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw OpenTinkerError.connection(t.baseUrl, error);
  }
  const text = await response.text();
  let answer: unknown = text;
  try {
    answer = JSON.parse(text);
  } catch {
    // not JSON: fromResponse quotes the text
  }
  if (!response.ok) throw OpenTinkerError.fromResponse(response, answer);
  return answer as T;
}
