import { Transform } from 'node:stream';
import type { Readable } from 'node:stream';
import type { AppError } from './app-error';

/** Passes bytes through until `limit`, then fails the pipeline with `refusal()` (which stops reading an upload). */
export function byteLimit(limit: number, refusal: () => AppError): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > limit) done(refusal());
      else done(null, chunk);
    },
  });
}

/**
 * A request body read through {@link byteLimit}: the returned stream fails past `limit` bytes, on the
 * body's error, or when the client goes away mid-body. The body is piped rather than put in a
 * pipeline: a failed pipeline destroys its source, which for a request is the client's socket, and
 * the client would then see a reset instead of the 413. Call `release()` once done with the stream.
 */
export function limitedBody(body: Readable, limit: number, refusal: () => AppError): { stream: Transform; release(): void } {
  const stream = byteLimit(limit, refusal);
  const onError = (error: Error) => stream.destroy(error);
  const onClose = () => {
    if (!body.readableEnded) stream.destroy(new Error('the client closed the connection'));
  };
  body.once('error', onError);
  body.once('close', onClose);
  body.pipe(stream);
  return {
    stream,
    release: () => {
      body.off('error', onError);
      body.off('close', onClose);
      body.unpipe(stream);
    },
  };
}
