import { Injectable } from '@nestjs/common';
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import type { Principal } from '../auth/principal';
import { AppError, ErrorCode } from '../core/app-error';
import { AppConfig } from '../config/app-config';
import { JobsService } from './jobs.service';
import { findJobKind, kindList, kindsWith } from '../kinds/job-kinds';

/**
 * Finds the results file of a job whose kind writes one (`inference`: `results.jsonl`) for its owner:
 * the published artifact, or the file being written.
 */
@Injectable()
export class JobResultsService {
  constructor(
    private readonly jobs: JobsService,
    private readonly config: AppConfig,
  ) {}

  async open(caller: Principal, id: string): Promise<Readable> {
    const job = await this.jobs.get(caller, id);
    const file = findJobKind(job.kind)?.results;
    if (!file) {
      throw new AppError(ErrorCode.RESULTS_NOT_FOUND, `Job ${id} is a ${job.kind} job; only ${kindList(kindsWith('results'))} jobs have results`, { field: 'id' });
    }
    const published = (await this.jobs.artifacts(caller, id)).some((a) => a.name === file);
    if (published) return (await this.jobs.openArtifact(caller, id, file)).stream;
    // While the job runs on this server's worker, its file grows batch by batch.
    const live = join(this.config.jobDir(id), 'work', file);
    if (job.state === 'running' && existsSync(live)) return createReadStream(live).pipe(completeLines());
    throw new AppError(ErrorCode.RESULTS_NOT_FOUND, `Job ${id} has no results yet (state ${job.state})`, { field: 'id' });
  }
}

/** Passes whole lines only: a line still being written at the end of a growing file is held back. */
function completeLines(): Transform {
  let tail: Buffer = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const data = tail.length ? Buffer.concat([tail, chunk]) : chunk;
      const end = data.lastIndexOf(0x0a) + 1;
      tail = data.subarray(end);
      callback(null, end > 0 ? data.subarray(0, end) : undefined);
    },
  });
}
