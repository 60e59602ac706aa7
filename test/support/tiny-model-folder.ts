import { ByteTokenizer, CHATML_TEMPLATE, initWeights, modelPreset, saveHfModelDir } from '@opentinker/engine';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { walkFiles } from '../../src/checkpoints/checkpoint-store';
import { checkpointTar } from '../../src/checkpoints/checkpoint-tar';

/** A tiny random-weight model folder as the engine saves it (tiny-char, context 64, ChatML), at `dir`. */
export async function writeTinyModelFolder(dir: string, seed = 3): Promise<void> {
  const config = { ...modelPreset('tiny-char'), max_position_embeddings: 64 };
  await saveHfModelDir(dir, { config, weights: initWeights(config, seed), tokenizer: new ByteTokenizer(), chatTemplate: CHATML_TEMPLATE });
}

/** A folder as `tar cf - <root>` packs it: its files under `<root>/`. */
export async function folderTar(dir: string, root = 'my-model'): Promise<Buffer> {
  return collect(checkpointTar(dir, await walkFiles(dir), root));
}

export interface TarEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'block-device' | 'fifo';
  body?: Buffer | string;
  linkname?: string;
}

/** A tar of exactly these entries (hostile ones included), for the upload checks. */
export async function tarOf(entries: readonly TarEntry[]): Promise<Buffer> {
  const p = pack();
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    p.entry({ name: e.name, type: e.type ?? 'file', mode: 0o644, ...(e.linkname ? { linkname: e.linkname } : {}), size: body.length }, body);
  }
  p.finalize();
  return collect(Readable.from(p as unknown as AsyncIterable<Buffer>));
}

async function collect(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}
