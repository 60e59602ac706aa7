import { createWriteStream, renameSync, rmSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Writes a downloaded stream to `target` and returns its size. Written beside the target and renamed
 * at the end, so an interrupted download leaves no half file under the real name.
 */
export async function saveDownload(stream: Readable, target: string): Promise<number> {
  const partial = `${target}.part`;
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
  try {
    await pipeline(stream, createWriteStream(partial));
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
  renameSync(partial, target);
  return bytes;
}
