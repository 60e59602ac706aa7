import { Injectable } from '@nestjs/common';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { AppConfig } from '../config/app-config';
import { JobsService } from '../jobs-api/jobs.service';
import { CheckpointInfo, describeCheckpoint, listCheckpoints, resolveCheckpointStep, STEP_REF } from './checkpoint-store';
import { checkpointTar } from './checkpoint-tar';

/** A job's checkpoints on this server's disk, for the job's owner (and admins). */
@Injectable()
export class CheckpointsService {
  readonly jobsDir: string;

  constructor(
    private readonly jobs: JobsService,
    config: AppConfig,
  ) {
    this.jobsDir = join(config.home, 'jobs');
  }

  async list(caller: Principal, jobId: string): Promise<CheckpointInfo[]> {
    await this.jobs.get(caller, jobId);
    return listCheckpoints(this.jobsDir, jobId);
  }

  /** One checkpoint by step number or `latest`; the caller must be allowed to see the job. */
  async find(caller: Principal, jobId: string, ref: string): Promise<CheckpointInfo> {
    await this.jobs.get(caller, jobId);
    if (!STEP_REF.test(ref)) {
      throw new AppError(ErrorCode.VALIDATION, `step must be a step number or "latest", got ${JSON.stringify(ref.slice(0, 40))}`, { field: 'step' });
    }
    const step = await resolveCheckpointStep(this.jobsDir, jobId, ref);
    const info = step === null ? null : await describeCheckpoint(this.jobsDir, jobId, step);
    if (!info) {
      const what = ref === 'latest' ? 'has no checkpoint yet' : `has no checkpoint at step ${ref}`;
      throw new AppError(ErrorCode.CHECKPOINT_NOT_FOUND, `Job ${jobId} ${what}`, { field: 'step' });
    }
    return info;
  }

  /** The checkpoint as a tar stream (folder `step-<n>/` inside), built as it is read. */
  async open(caller: Principal, jobId: string, ref: string): Promise<{ info: CheckpointInfo; stream: Readable }> {
    const info = await this.find(caller, jobId, ref);
    return { info, stream: checkpointTar(info.dir, info.files, `step-${info.step}`) };
  }
}
