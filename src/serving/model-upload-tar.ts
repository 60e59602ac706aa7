import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, type Header as Headers } from 'tar-stream';
import { AppError, ErrorCode } from '../core/app-error';
import { limitedBody } from '../core/byte-limit';
import { isModelFile } from '../hub/hub-cache';
import type { UserModelFile } from '../models/user-model.entity';

/** Files one model folder may hold (a 405B model has 191 shards). */
export const MAX_MODEL_FILES = 1024;

const ALLOWED = '*.safetensors (and model.safetensors.index.json), config.json, generation_config.json, tokenizer files and chat template files';

function refused(message: string, entry?: string): AppError {
  return new AppError(ErrorCode.MODEL_INVALID, `Model folder refused: ${message}`, entry === undefined ? {} : { details: { entry } });
}

/**
 * The file name an entry of an uploaded model tar stands for, or null for a folder entry to skip.
 * Names are the folder's files at the top (`config.json`), or under one folder of any name
 * (`my-model/config.json`, as `tar cf - my-model` writes it), the same for every entry. Refused: links
 * and special files, absolute paths, `..`, deeper folders, and any file a model folder does not hold.
 */
export function modelTarEntryName(header: Pick<Headers, 'name' | 'type'>, state: { root: string | null | undefined }): string | null {
  const raw = header.name;
  const show = JSON.stringify(raw.slice(0, 200));
  if (raw.includes('\0') || raw.includes('\\')) throw refused(`entry ${show} has a character a file name here may not have`, raw);
  if (raw.startsWith('/')) throw refused(`entry ${show} is an absolute path`, raw);
  const parts = raw.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw refused(`entry ${show} leaves the folder (..)`, raw);
  const type = header.type ?? 'file';
  if (type === 'directory') {
    if (parts.length > 1) throw refused(`entry ${show} is a folder inside the model folder; a model folder's files sit at its top`, raw);
    if (parts.length === 1) claimRoot(parts[0], state, raw);
    return null;
  }
  if (type !== 'file' && type !== 'contiguous-file') throw refused(`entry ${show} is a ${type}; only regular files are taken (no links, devices or pipes)`, raw);
  if (parts.length === 0 || parts.length > 2) throw refused(`entry ${show} is not a file at the model folder's top`, raw);
  claimRoot(parts.length === 2 ? parts[0] : null, state, raw);
  const name = parts[parts.length - 1];
  if (!isModelFile(name)) throw refused(`${JSON.stringify(name)} is not a file a model folder needs; only ${ALLOWED} are taken`, raw);
  return name;
}

/** All entries sit under the same top folder, or none does. */
function claimRoot(root: string | null, state: { root: string | null | undefined }, raw: string): void {
  if (state.root === undefined) state.root = root;
  else if (state.root !== root)
    throw refused(
      `entry ${JSON.stringify(raw.slice(0, 200))} is outside ${state.root === null ? 'the top of the tar' : `the folder ${state.root}/`} where the other entries are`,
      raw,
    );
}

/**
 * Unpacks a model folder sent as a tar stream into `dir` (an empty folder), entry by entry, never
 * holding a file in memory: each allowed file is written with `wx` (no overwrite, no following a
 * link) while its sha256 is computed. Past `limit` bytes of tar the upload fails with `refusal()`. The
 * caller deletes `dir` on failure.
 */
export async function receiveModelTar(body: Readable, dir: string, limit: number, refusal: () => AppError): Promise<UserModelFile[]> {
  const files: UserModelFile[] = [];
  const state: { root: string | null | undefined } = { root: undefined };
  const { stream: limiter, release } = limitedBody(body, limit, refusal);
  const tar = extract();
  tar.on('entry', (header, stream, next) => {
    const done = (error?: unknown) => (error === undefined ? next() : next(error as Error));
    (async () => {
      const name = modelTarEntryName(header, state);
      if (name === null) return stream.resume();
      if (files.some((f) => f.path === name)) throw refused(`${JSON.stringify(name)} appears twice`, header.name);
      if (files.length >= MAX_MODEL_FILES) throw refused(`more than ${MAX_MODEL_FILES} files`, header.name);
      const hash = createHash('sha256');
      let size = 0;
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      await pipeline(stream, hashing, createWriteStream(join(dir, name), { flags: 'wx', mode: 0o644 }));
      files.push({ path: name, size, sha256: hash.digest('hex') });
    })().then(
      () => done(),
      (error: unknown) => {
        stream.resume();
        done(error);
      },
    );
  });
  try {
    // tar-stream's extract is a streamx stream, whose destruction Node's pipeline() does not notice: settle on its own events.
    await new Promise<void>((resolve, reject) => {
      let failure: unknown = null;
      tar.on('error', (error: unknown) => (failure ??= error));
      limiter.once('error', (error) => {
        failure ??= error;
        tar.destroy(error);
      });
      tar.on('close', () => (failure === null ? resolve() : reject(failure)));
      limiter.pipe(tar as unknown as Writable);
    });
  } catch (error) {
    if (error instanceof AppError || (error as NodeJS.ErrnoException)?.syscall) throw error;
    throw refused(`not a readable tar stream, or it stopped before its end (${(error as Error)?.message ?? error})`);
  } finally {
    release();
    limiter.destroy();
  }
  if (!files.some((f) => f.path === 'config.json')) throw refused('no config.json');
  if (!files.some((f) => f.path.endsWith('.safetensors'))) throw refused('no *.safetensors weights (only safetensors are loaded)');
  return files;
}
