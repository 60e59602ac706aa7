import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pack as tarPack } from 'tar-stream';
import type { CheckpointFile } from './checkpoint-store';

/**
 * A tar of `files` (paths relative to `dir`, as {@link walkFiles} lists them) under the folder name
 * `root` (at the archive's top when `root` is empty, as the Tinker SDK unpacks a checkpoint), produced
 * file by file: each file is piped into its entry, and the next one starts only when the consumer has
 * taken it, so memory stays flat whatever the checkpoint's size. A file that changes size or
 * disappears while being read (a pruned checkpoint) fails the stream rather than writing a corrupt
 * archive.
 *
 * @example
 * ```ts
 * const files = await walkFiles(dir);
 * await pipeline(checkpointTar(dir, files, 'step-3'), createWriteStream('step-3.tar'));
 * ```
 */
export function checkpointTar(dir: string, files: readonly CheckpointFile[], root: string): Readable {
  const pack = tarPack();
  const mtime = new Date();
  const prefix = root === '' ? '' : `${root}/`;
  const write = async () => {
    if (prefix) pack.entry({ name: prefix, type: 'directory', mode: 0o755, mtime });
    const dirs = new Set<string>();
    for (const f of files) {
      const parts = f.path.split('/');
      for (let i = 1; i < parts.length; i++) {
        const d = parts.slice(0, i).join('/');
        if (dirs.has(d)) continue;
        dirs.add(d);
        pack.entry({ name: `${prefix}${d}/`, type: 'directory', mode: 0o755, mtime });
      }
      const header = { name: `${prefix}${f.path}`, size: f.size, mode: 0o644, mtime };
      if (f.size === 0) pack.entry(header, Buffer.alloc(0));
      else {
        const entry = pack.entry(header);
        // streamx emits the error after pipeline() has settled and let go of its listeners.
        entry.on('error', () => undefined);
        await pipeline(createReadStream(join(dir, ...parts), { start: 0, end: f.size - 1 }), entry);
      }
    }
    pack.finalize();
  };
  // The error reaches the consumer through the iterator below; a second, unheard 'error' event would throw.
  pack.on('error', () => undefined);
  write().catch((error: Error) => pack.destroy(error));
  // tar-stream speaks streamx; Node's Readable is what Fastify and pipeline() expect.
  return Readable.from(pack as unknown as AsyncIterable<Buffer>, { objectMode: false });
}
