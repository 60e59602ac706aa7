import type { Readable } from 'node:stream';
import { AppError, ErrorCode } from '../core/app-error';
import { limitedBody } from '../core/byte-limit';

/** A raw request body read whole, refused with 413 past `limit` bytes (setting `tinker_request_max_bytes`). */
export async function readBody(body: Readable, limit: number): Promise<Buffer> {
  const { stream, release } = limitedBody(
    body,
    limit,
    () =>
      new AppError(ErrorCode.BODY_TOO_LARGE, `The body is over ${limit} bytes (operator setting tinker_request_max_bytes)`, {
        details: { setting: 'tinker_request_max_bytes', limit },
      }),
  );
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk as Buffer);
  } finally {
    release();
  }
  return Buffer.concat(chunks);
}
