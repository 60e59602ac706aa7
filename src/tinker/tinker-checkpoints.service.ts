import { Injectable } from '@nestjs/common';
import type { Checkpoint, TrainingRun, WeightsInfoResponse } from '@opentinker/tinker-wire';
import { existsSync } from 'node:fs';
import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Principal } from '../auth/principal';
import { walkFiles } from '../checkpoints/checkpoint-store';
import { checkpointTar } from '../checkpoints/checkpoint-tar';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { iso } from '../core/columns';
import { secretsCipher } from '../jobs/job-secrets-cipher';
import {
  CHECKPOINT_NAME,
  CheckpointKind,
  TINKER_META_FILE,
  tinkerCheckpointDir,
  tinkerKindDir,
  type CheckpointRef,
  type TinkerCheckpointMeta,
} from '../rollout/tinker-checkpoint-files';
import {
  ARCHIVE_KEY_PURPOSE,
  ARCHIVE_URL_SECONDS,
  archivePath,
  archiveSignatureValid,
  signArchive,
  type ArchiveRef,
  type CheckpointArchiveUrlResponse,
} from './tinker-archive-urls';
import type { TinkerModelEntity } from './tinker-model.entity';
import { TinkerRepository } from './tinker.repository';

/** A training client inside its runner. */
export function modelKey(model: Pick<TinkerModelEntity, 'seq'>): string {
  return `train-${model.seq}`;
}

/** `tinker://<model id>/<kind>/<name>`. */
export function tinkerPath(modelId: string, kind: CheckpointKind, name: string): string {
  return `tinker://${modelId}/${kind}/${name}`;
}

/** A checkpoint found on disk. */
interface FoundCheckpoint {
  kind: CheckpointKind;
  name: string;
  meta: TinkerCheckpointMeta | null;
  time: number;
  bytes: number;
}

const KIND_OF_TYPE: Record<CheckpointKind, Checkpoint['checkpoint_type']> = { weights: 'training', sampler_weights: 'sampler' };

/**
 * Tinker checkpoints (`tinker://<model id>/weights/<name>`: adapter and optimizer state;
 * `…/sampler_weights/<name>`: the adapter) of the caller's training clients: names checked and turned
 * into folders of the runner job that saved them, listed and deleted for the `RestClient`, and the
 * training runs (a training run is a training client) they belong to. A checkpoint past its TTL is
 * deleted when next looked at.
 */
@Injectable()
export class TinkerCheckpoints {
  constructor(
    private readonly config: AppConfig,
    private readonly repo: TinkerRepository,
  ) {}

  private get jobsDir(): string {
    return join(this.config.home, 'jobs');
  }

  /** The caller's training client, or 404 (someone else's too). */
  ownedModel(caller: Principal, id: string, field = 'model_id'): Promise<TinkerModelEntity> {
    return this.modelOf(caller.userId, id, field);
  }

  private async modelOf(userId: string, id: string, field: string): Promise<TinkerModelEntity> {
    const model = await this.repo.findModel(id);
    if (!model || model.ownerId !== userId) throw new AppError(ErrorCode.NOT_FOUND, `Training client ${id} not found`, { field });
    return model;
  }

  /** A checkpoint name as a save request gives it: the last part of a Tinker path, a folder here. */
  checkName(name: string, field = 'path'): string {
    if (!CHECKPOINT_NAME.test(name)) {
      throw new AppError(ErrorCode.VALIDATION, `${field}: checkpoint name ${JSON.stringify(name)} must be 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'`, {
        field,
      });
    }
    return name;
  }

  /** Parses a `tinker://` path of one of the caller's checkpoints that exists; 404 otherwise. */
  resolve(caller: Principal, path: string, field = 'path'): Promise<{ model: TinkerModelEntity; ref: CheckpointRef; meta: TinkerCheckpointMeta; dir: string }> {
    return this.resolveFor(caller.userId, path, field);
  }

  private async resolveFor(userId: string, path: string, field: string): Promise<{ model: TinkerModelEntity; ref: CheckpointRef; meta: TinkerCheckpointMeta; dir: string }> {
    const m = /^tinker:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
    if (!m) throw new AppError(ErrorCode.VALIDATION, `${field} ${JSON.stringify(path)} is not tinker://<training run>/<weights|sampler_weights>/<name>`, { field });
    const kind = CheckpointKind.safeParse(m[2]);
    if (!kind.success) throw new AppError(ErrorCode.VALIDATION, `${field}: ${m[2]} checkpoints are not kept here (weights or sampler_weights)`, { field });
    const model = await this.modelOf(userId, m[1], field);
    const ref: CheckpointRef = { job_id: model.jobId, model: modelKey(model), kind: kind.data, name: this.checkName(m[3], field) };
    const meta = await this.live(ref);
    if (!meta) throw new AppError(ErrorCode.CHECKPOINT_NOT_FOUND, `Checkpoint ${path} not found`, { field });
    return { model, ref, meta, dir: tinkerCheckpointDir(this.jobsDir, ref) };
  }

  /** A checkpoint's record, or null when it is not there (or was past its TTL, and is deleted now). */
  private async live(ref: CheckpointRef): Promise<TinkerCheckpointMeta | null> {
    const dir = tinkerCheckpointDir(this.jobsDir, ref);
    const meta = await readMeta(dir);
    if (!meta) return null;
    if (meta.expires_at !== null && Date.parse(meta.expires_at) < Date.now()) {
      await rm(dir, { recursive: true, force: true });
      return null;
    }
    return meta;
  }

  private async found(model: TinkerModelEntity): Promise<FoundCheckpoint[]> {
    const out: FoundCheckpoint[] = [];
    for (const kind of CheckpointKind.options) {
      const dir = tinkerKindDir(this.jobsDir, model.jobId, modelKey(model), kind);
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        if (!CHECKPOINT_NAME.test(name) || name.endsWith('.tmp')) continue;
        const ref: CheckpointRef = { job_id: model.jobId, model: modelKey(model), kind, name };
        const meta = await this.live(ref);
        if (!meta) continue;
        const folder = tinkerCheckpointDir(this.jobsDir, ref);
        out.push({ kind, name, meta, time: Date.parse(meta.created_at) || 0, bytes: await folderBytes(folder) });
      }
    }
    return out.sort((a, b) => a.time - b.time || (a.name < b.name ? -1 : 1));
  }

  private checkpoint(model: TinkerModelEntity, c: FoundCheckpoint): Checkpoint {
    const metadata = c.meta?.user_metadata ?? null;
    return {
      checkpoint_id: `${c.kind}/${c.name}`,
      checkpoint_type: KIND_OF_TYPE[c.kind],
      time: iso(c.time)!,
      tinker_path: tinkerPath(model.id, c.kind, c.name),
      size_bytes: c.bytes,
      public: false,
      ...(metadata ? { user_metadata: metadata } : {}),
      ...(c.meta?.expires_at ? { expires_at: c.meta.expires_at } : {}),
    };
  }

  /** `GET training_runs/{id}/checkpoints`, oldest first. */
  async listOf(caller: Principal, modelId: string): Promise<Checkpoint[]> {
    const model = await this.ownedModel(caller, modelId, 'training_run_id');
    return (await this.found(model)).map((c) => this.checkpoint(model, c));
  }

  /** `GET checkpoints`: every checkpoint of the caller's training clients, newest first (the newest `scan` clients are looked at). */
  async listAll(caller: Principal, offset: number, limit: number): Promise<{ checkpoints: Checkpoint[]; total: number }> {
    const { rows } = await this.repo.modelsOf(caller.userId, 0, 1000);
    const all: Array<{ model: TinkerModelEntity; c: FoundCheckpoint }> = [];
    for (const model of rows) for (const c of await this.found(model)) all.push({ model, c });
    all.sort((a, b) => b.c.time - a.c.time);
    return { checkpoints: all.slice(offset, offset + limit).map(({ model, c }) => this.checkpoint(model, c)), total: all.length };
  }

  /** `DELETE training_runs/{id}/checkpoints/{kind}/{name}`. */
  async delete(caller: Principal, modelId: string, checkpointId: string): Promise<void> {
    const model = await this.ownedModel(caller, modelId, 'training_run_id');
    const [kind, name, ...rest] = checkpointId.split('/');
    const parsed = CheckpointKind.safeParse(kind);
    if (!parsed.success || name === undefined || rest.length > 0) {
      throw new AppError(ErrorCode.VALIDATION, `checkpoint ${JSON.stringify(checkpointId)} is not weights/<name> or sampler_weights/<name>`, { field: 'checkpoint_id' });
    }
    const ref: CheckpointRef = { job_id: model.jobId, model: modelKey(model), kind: parsed.data, name: this.checkName(name, 'checkpoint_id') };
    const dir = tinkerCheckpointDir(this.jobsDir, ref);
    if (!existsSync(join(dir, TINKER_META_FILE)))
      throw new AppError(ErrorCode.CHECKPOINT_NOT_FOUND, `Checkpoint ${tinkerPath(model.id, ref.kind, ref.name)} not found`, { field: 'checkpoint_id' });
    await rm(dir, { recursive: true, force: true });
  }

  /**
   * `GET training_runs/{id}/checkpoints/{kind}/{name}/archive`: a URL at `origin` (this server as the
   * caller reached it) that downloads one of the caller's checkpoints for {@link ARCHIVE_URL_SECONDS}
   * without a key.
   */
  async archiveUrl(caller: Principal, ref: ArchiveRef, origin: string): Promise<CheckpointArchiveUrlResponse> {
    const { model } = await this.resolve(caller, archiveTinkerPath(ref), 'checkpoint_id');
    const expires = Math.floor(Date.now() / 1000) + ARCHIVE_URL_SECONDS;
    return { url: `${origin}${archivePath(ref)}?${signArchive(this.archiveKey(), ref, model.ownerId, expires)}`, expires: iso(expires * 1000)! };
  }

  /**
   * The archive a signed URL names: a tar of the checkpoint's files at its top (as the SDK unpacks it),
   * streamed as it is read. A signature that does not match, or has expired, is a 403; a checkpoint
   * gone meanwhile a 404.
   */
  async openArchive(ref: ArchiveRef, expires: string, signature: string): Promise<{ stream: Readable }> {
    const model = await this.repo.findModel(ref.modelId);
    const valid = model !== null && archiveSignatureValid(this.archiveKey(), ref, model.ownerId, expires, signature, Math.floor(Date.now() / 1000));
    if (!model || !valid) {
      throw new AppError(ErrorCode.FORBIDDEN, 'This download URL is not valid or has expired: ask for a new one (RestClient.get_checkpoint_archive_url)', {
        field: 'signature',
      });
    }
    const { dir } = await this.resolveFor(model.ownerId, archiveTinkerPath(ref), 'checkpoint_id');
    return { stream: checkpointTar(dir, await walkFiles(dir), '') };
  }

  private archiveKey(): Buffer {
    return secretsCipher(this.config).derive(ARCHIVE_KEY_PURPOSE);
  }

  /** `weights_info`: the LoRA config a checkpoint was saved with (what pre-0.38 SDKs create a training client from). */
  async weightsInfo(caller: Principal, path: string): Promise<WeightsInfoResponse> {
    const { model, meta } = await this.resolve(caller, path, 'tinker_path');
    return {
      base_model: model.baseModel,
      is_lora: true,
      lora_rank: meta.lora.rank,
      train_attn: meta.lora.train_attn,
      train_mlp: meta.lora.train_mlp,
      train_unembed: meta.lora.train_unembed,
    };
  }

  /** A training run as the `RestClient` shows it, with its newest checkpoints. */
  async trainingRun(caller: Principal, model: TinkerModelEntity): Promise<TrainingRun> {
    const found = await this.found(model);
    const last = (kind: CheckpointKind) => {
      const c = found.filter((f) => f.kind === kind).pop();
      return c ? this.checkpoint(model, c) : null;
    };
    const metadata = stringValues(model.userMetadata);
    return {
      training_run_id: model.id,
      base_model: model.baseModel,
      model_owner: caller.name,
      is_lora: true,
      corrupted: false,
      lora_rank: model.loraRank,
      last_request_time: iso(model.lastRequestAt)!,
      last_checkpoint: last('weights'),
      last_sampler_checkpoint: last('sampler_weights'),
      ...(metadata ? { user_metadata: metadata } : {}),
    };
  }
}

/** The `tinker://` path of an archive's checkpoint (its parts as they came: checked by {@link TinkerCheckpoints.resolve}). */
function archiveTinkerPath(ref: ArchiveRef): string {
  return `tinker://${ref.modelId}/${ref.kind}/${ref.name}`;
}

async function readMeta(dir: string): Promise<TinkerCheckpointMeta | null> {
  try {
    return JSON.parse(await readFile(join(dir, TINKER_META_FILE), 'utf8')) as TinkerCheckpointMeta;
  } catch {
    return null;
  }
}

/** Bytes of the regular files in a checkpoint folder (links not followed). */
async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isFile()) total += (await lstat(join(dir, e.name))).size;
    else if (e.isDirectory()) total += await folderBytes(join(dir, e.name));
  }
  return total;
}

/** `user_metadata` as the REST answers type it (string values only). */
function stringValues(metadata: Record<string, unknown> | null): Record<string, string> | null {
  if (!metadata) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) if (typeof v === 'string') out[k] = v;
  return Object.keys(out).length > 0 ? out : null;
}
