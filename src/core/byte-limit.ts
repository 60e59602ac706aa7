import { Transform } from 'node:stream';
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
