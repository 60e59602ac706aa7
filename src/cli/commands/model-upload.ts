import type { OpenTinkerClient } from '@opentinker/client';
import { isOpenTinkerError } from '@opentinker/client';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { isModelFile } from '../../hub/hub-cache';
import { checkpointTar } from '../../checkpoints/checkpoint-tar';
import { modelContentHash } from '../../models/user-model-files';
import type { UserModelFile } from '../../models/user-model.entity';
import { submit } from './jobs.commands';
import { printLine } from './output';

/**
 * The files of a local model folder that an upload takes: the regular files at its top that a model
 * folder holds (safetensors, config, tokenizer, chat template), links followed (a Hugging Face cache
 * snapshot is links into its blobs), each with its sha256; and the names left out.
 */
export async function localModelFiles(dir: string): Promise<{ files: UserModelFile[]; skipped: string[] }> {
  const files: UserModelFile[] = [];
  const skipped: string[] = [];
  for (const name of (await readdir(dir)).sort()) {
    const info = await stat(join(dir, name)).catch(() => null);
    if (!info?.isFile() || !isModelFile(name)) {
      skipped.push(name);
      continue;
    }
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(join(dir, name))) hash.update(chunk as Buffer);
    files.push({ path: name, size: info.size, sha256: hash.digest('hex') });
  }
  return { files, skipped };
}

/**
 * `model:<id>` of a local model folder on the server: an upload of the same content (the server's
 * `content_sha256` of the caller's models) when there is one, else the folder uploaded now as a tar
 * stream, read file by file.
 */
export async function uploadedModelName(client: OpenTinkerClient, dir: string, json: boolean): Promise<string> {
  const { files, skipped } = await localModelFiles(dir);
  const hash = modelContentHash(files);
  const same = (await client.modelsApi.list()).data.find((m) => m.id.startsWith('model:') && 'content_sha256' in m && m.content_sha256 === hash);
  if (same) {
    if (!json) printLine(`Using ${same.id}: ${dir} was uploaded before (same content).`);
    return same.id;
  }
  if (skipped.length > 0) process.stderr.write(`opentinker: note: not uploaded from ${dir} (a model folder needs none of them): ${skipped.join(', ')}\n`);
  const bytes = files.reduce((a, f) => a + f.size, 0);
  if (!json) printLine(`Uploading ${dir} (${files.length} files, ${(bytes / 1024 ** 2).toFixed(1)} MiB): the server cannot read this folder…`);
  const model = await client.modelsApi.upload(checkpointTar(dir, files, basename(dir) || 'model'), { name: basename(dir).slice(0, 128) || 'model' });
  if (!json) printLine(`Uploaded ${dir} as ${model.id}.`);
  return model.id;
}

/**
 * Submits a job whose `model.path` may be a model folder of this machine (the seed's `model_path=./my-model`,
 * made absolute): when the server cannot read it (not under its `model_roots`, refused with
 * `OT_ERR_HOST_ONLY`), the folder is uploaded once per content ({@link uploadedModelName}) and the job
 * names `model:<id>` instead.
 */
export async function submitWithLocalModel(client: OpenTinkerClient, spec: Record<string, unknown>, json: boolean) {
  const model = spec.model as { path?: unknown } | undefined;
  const local = typeof model?.path === 'string' && isAbsolute(model.path) && existsSync(join(model.path, 'config.json')) ? model.path : null;
  try {
    return await submit(client, spec);
  } catch (error) {
    if (local === null || !isOpenTinkerError(error) || error.code !== 'OT_ERR_HOST_ONLY' || error.field !== 'model.path') throw error;
    model!.path = await uploadedModelName(client, local, json);
    return submit(client, spec);
  }
}
