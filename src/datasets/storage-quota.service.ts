import { Injectable } from '@nestjs/common';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { HubAccessService } from '../hub/hub-access.service';
import { JobsRepository } from '../jobs/jobs.repository';
import { kindsWith } from '../kinds/job-kinds';
import { UserModelsRepository } from '../models/user-models.repository';
import { DatasetsRepository } from './datasets.repository';

/**
 * Storage one user keeps on this server: uploaded datasets and models (as recorded), the checkpoints of
 * their jobs (their folders on this host; checkpoints on other workers' disks are not seen here) and the
 * bytes their jobs downloaded from the Hub into any worker's cache (recorded by the workers:
 * `hub_access`). Plain users are held to `storage_quota_bytes`: a full quota refuses uploads, new
 * checkpointing jobs and jobs naming an `hf:` repo with `OT_ERR_QUOTA_EXCEEDED` (413) until datasets or
 * models are deleted, and a job's Hub download that would pass it fails before its first byte. Admins
 * have no quota.
 */
@Injectable()
export class StorageQuota {
  constructor(
    private readonly config: AppConfig,
    private readonly datasets: DatasetsRepository,
    private readonly jobs: JobsRepository,
    private readonly models: UserModelsRepository,
    private readonly hub: HubAccessService,
  ) {}

  async used(userId: string): Promise<{ datasets: number; checkpoints: number; models: number; hub: number }> {
    const [datasets, models, ids, hub] = await Promise.all([
      this.datasets.bytesOf(userId),
      this.models.bytesOf(userId),
      this.jobs.idsOf(
        userId,
        kindsWith('checkpoints').map((k) => k.kind),
      ),
      this.hub.bytesOf(userId),
    ]);
    let checkpoints = 0;
    for (const id of ids) checkpoints += await folderBytes(join(this.config.values.home, 'jobs', id, 'work', 'checkpoints'));
    return { datasets, checkpoints, models, hub };
  }

  /** Bytes the user may still store (Infinity without a quota). */
  async remaining(caller: Pick<Principal, 'userId' | 'role'>): Promise<number> {
    const quota = this.config.values.storage_quota_bytes;
    if (quota === 0 || caller.role === 'admin') return Infinity;
    const { datasets, checkpoints, models, hub } = await this.used(caller.userId);
    return quota - datasets - checkpoints - models - hub;
  }

  /** Throws 413 when the caller's quota is already full. */
  async assertRoom(caller: Pick<Principal, 'userId' | 'role'>, field?: string): Promise<number> {
    const left = await this.remaining(caller);
    if (left <= 0) throw quotaFull(this.config.values.storage_quota_bytes, field);
    return left;
  }
}

export function quotaFull(quota: number, field?: string): AppError {
  return new AppError(
    ErrorCode.QUOTA_EXCEEDED,
    `Your datasets, checkpoints, uploaded models and Hub downloads fill your storage quota of ${quota} bytes (operator setting storage_quota_bytes); delete datasets or models to make room`,
    { field, details: { quota_bytes: quota } },
  );
}

/** Bytes of regular files under `dir` (links not followed; a missing folder is 0). */
async function folderBytes(dir: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += await folderBytes(path);
    else if (e.isFile()) total += (await lstat(path)).size;
  }
  return total;
}
