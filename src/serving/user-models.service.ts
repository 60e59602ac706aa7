import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { quotaFull, StorageQuota } from '../datasets/storage-quota.service';
import { JobsRepository } from '../jobs/jobs.repository';
import { UserModelEntity } from '../models/user-model.entity';
import { isUserModelId, modelContentHash, userModelDir, userModelName, userModelsDir } from '../models/user-model-files';
import { UserModelsRepository } from '../models/user-models.repository';
import { ModelChecker } from './model-check';
import { receiveModelTar } from './model-upload-tar';

export interface ModelUploadRequest {
  name: string;
  /** The declared body length, when the client sent one: refused before reading when over the limit. */
  contentLength?: number;
}

/** Models listed for one user (the newest). */
const LISTED = 500;

/**
 * Model folders users bring (`POST /v1/models`): a Hugging Face folder as a tar stream, unpacked to
 * `<home>/models/<id>.part/` within `model_upload_max_bytes` and the caller's storage quota, checked in
 * a separate process, then renamed to `<home>/models/<id>/` and recorded as `model:<id>`, usable by its
 * owner wherever a model is named. Any refusal deletes the folder. Another user's model is "not found".
 */
@Injectable()
export class UserModelsService {
  private readonly logger = new Logger('Models');

  constructor(
    private readonly models: UserModelsRepository,
    private readonly jobs: JobsRepository,
    private readonly config: AppConfig,
    private readonly quota: StorageQuota,
    private readonly checker: ModelChecker,
  ) {}

  async upload(caller: Principal, req: ModelUploadRequest, body: Readable): Promise<UserModelEntity> {
    const room = await this.quota.assertRoom(caller);
    const max = this.config.values.model_upload_max_bytes;
    const limit = Math.min(max, room);
    const refusal = () =>
      limit < max
        ? quotaFull(this.config.values.storage_quota_bytes)
        : new AppError(ErrorCode.MODEL_TOO_LARGE, `Model folder larger than ${max} bytes (setting model_upload_max_bytes)`, { details: { limit_bytes: max } });
    if (req.contentLength !== undefined && req.contentLength > limit) throw refusal();

    const id = randomUUID();
    const part = `${userModelDir(this.config.home, id)}.part`;
    try {
      await mkdir(part, { recursive: true, mode: 0o700 });
      const files = await receiveModelTar(body, part, limit, refusal);
      const { modelType } = await this.checker.check(part);
      await rename(part, userModelDir(this.config.home, id));
      const model = Object.assign(new UserModelEntity(), {
        id,
        ownerId: caller.userId,
        name: req.name,
        modelType,
        bytes: files.reduce((a, f) => a + f.size, 0),
        contentSha256: modelContentHash(files),
        files: [...files].sort((a, b) => (a.path < b.path ? -1 : 1)),
        createdAt: Date.now(),
      });
      await this.models.insert(model);
      this.logger.log(`Model ${id} (${modelType}, ${files.length} files, ${model.bytes} bytes) uploaded by ${caller.name}`);
      return model;
    } catch (error) {
      await rm(part, { recursive: true, force: true });
      throw error;
    }
  }

  /** The caller's models, newest first. */
  list(caller: Principal): Promise<UserModelEntity[]> {
    return this.models.ofOwner(caller.userId, LISTED);
  }

  /** One of the caller's models by id; anyone else's (or none) is 404 naming `field`. */
  async get(caller: Principal, id: string, field = 'id'): Promise<UserModelEntity> {
    const model = isUserModelId(id) ? await this.models.findById(id) : null;
    if (!model || model.ownerId !== caller.userId) {
      throw new AppError(ErrorCode.MODEL_NOT_FOUND, `Model ${JSON.stringify(userModelName(id))} not found: no uploaded model of yours has that id`, { field });
    }
    return model;
  }

  /** The folder a model server or job loads. */
  dir(model: UserModelEntity): string {
    return userModelDir(this.config.home, model.id);
  }

  /** Deletes the record and the files; refused while an unfinished job names the model (its runner loads it at start and on resume). */
  async delete(caller: Principal, id: string): Promise<void> {
    const model = await this.get(caller, id);
    const jobs = await this.jobs.unfinishedUsingModel(userModelName(model.id));
    if (jobs.length > 0) {
      throw new AppError(ErrorCode.MODEL_IN_USE, `Model ${userModelName(model.id)} is used by unfinished job(s) ${jobs.join(', ')}; cancel them or wait`, {
        field: 'id',
        details: { jobs },
      });
    }
    await this.models.delete(model.id);
    await rm(userModelDir(this.config.home, model.id), { recursive: true, force: true });
  }

  /** `<home>/models`: a model server may load folders under it. */
  get modelsDir(): string {
    return userModelsDir(this.config.home);
  }
}
