import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isAdmin, Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { limitedBody } from '../core/byte-limit';
import { EnvironmentRegistry } from '../registry/environment-registry.service';
import type { DatasetReport } from './dataset-check';
import { datasetDir, datasetFile, DatasetFormat, datasetPath, isDatasetId } from '../rollout/dataset-files';
import { DatasetReader } from './dataset-reader';
import type { DatasetRow } from './dataset-rows';
import { DatasetEntity } from './dataset.entity';
import { DatasetsRepository } from './datasets.repository';
import { JobsRepository } from '../jobs/jobs.repository';
import { quotaFull, StorageQuota } from './storage-quota.service';

export interface UploadRequest {
  environment: string;
  name: string;
  format: DatasetFormat;
  /** Refuse the file when any row is bad (default: keep it when at least one row is usable). */
  strict: boolean;
  /** The declared body length, when the client sent one: refused before reading when over the limit. */
  contentLength?: number;
}

@Injectable()
export class DatasetsService {
  private readonly logger = new Logger('Datasets');

  constructor(
    private readonly datasets: DatasetsRepository,
    private readonly jobs: JobsRepository,
    private readonly registry: EnvironmentRegistry,
    private readonly config: AppConfig,
    private readonly reader: DatasetReader,
    private readonly quota: StorageQuota,
  ) {}

  /** `<home>/datasets`, the folder job runners resolve dataset ids in (RunnerPaths.datasetsDir). */
  get datasetsDir(): string {
    return join(this.config.home, 'datasets');
  }

  /**
   * Streams the body to `<home>/datasets/<id>/upload.part` (never holding it in memory, within the size
   * limit and the caller's storage quota), checks every row with the environment's row check in a worker
   * thread (within the row, line and memory caps), then renames it to `data.<format>` and records it.
   * Any refusal deletes the folder, so nothing half-uploaded is ever left for a job to find.
   */
  async upload(caller: Principal, req: UploadRequest, body: Readable): Promise<{ dataset: DatasetEntity; report: DatasetReport }> {
    this.environment(req.environment);
    const room = await this.quota.assertRoom(caller);
    const max = this.config.values.dataset_max_bytes;
    const limit = Math.min(max, room);
    const refusal = () => (limit < max ? quotaFull(this.config.values.storage_quota_bytes) : tooLarge(max));
    if (req.contentLength !== undefined && req.contentLength > limit) throw refusal();

    const id = randomUUID();
    const dir = datasetDir(this.datasetsDir, id);
    const part = join(dir, 'upload.part');
    try {
      await mkdir(dir, { recursive: true });
      await receive(body, limit, part, refusal);
      const bytes = (await stat(part)).size;
      const report = await this.reader.check(part, req.format, req.environment);
      if (report.valid_rows === 0 || (req.strict && report.invalid_rows > 0)) {
        const why = report.rows === 0 ? 'the file has no rows' : report.valid_rows === 0 ? 'no row is usable' : `${report.invalid_rows} bad row(s) with strict=true`;
        throw new AppError(ErrorCode.DATASET_INVALID, `Dataset refused for environment ${req.environment}: ${why}`, { details: report });
      }
      await rename(part, datasetPath(this.datasetsDir, id, req.format));
      const dataset = Object.assign(new DatasetEntity(), {
        id,
        ownerId: caller.userId,
        name: req.name,
        environmentId: req.environment,
        format: req.format,
        rowCount: report.rows,
        invalidRowCount: report.invalid_rows,
        badRows: report.bad_rows,
        bytes,
        columns: report.columns,
        createdAt: Date.now(),
      });
      await this.datasets.insert(dataset);
      this.logger.log(`Dataset ${id} (${req.format}, ${report.rows} rows, ${report.invalid_rows} bad) uploaded by ${caller.name}`);
      return { dataset, report };
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  async list(caller: Principal, q: { page: number; limit: number }): Promise<{ items: DatasetEntity[]; total: number }> {
    return this.datasets.list({ ownerId: isAdmin(caller) ? undefined : caller.userId, limit: q.limit, offset: (q.page - 1) * q.limit });
  }

  /** A dataset the caller may see. Someone else's is "not found", so ids cannot be probed. */
  async get(caller: Principal, id: string): Promise<DatasetEntity> {
    const dataset = isDatasetId(id) ? await this.datasets.findById(id) : null;
    if (!dataset || (dataset.ownerId !== caller.userId && !isAdmin(caller))) throw AppError.notFound('Dataset', id);
    return dataset;
  }

  /** The first `limit` rows as stored (bad rows included, with their reason), in file order. */
  async preview(caller: Principal, id: string, limit: number): Promise<{ dataset: DatasetEntity; rows: DatasetRow[] }> {
    const dataset = await this.get(caller, id);
    const rows: DatasetRow[] = await this.reader.preview(this.file(dataset), dataset.format, limit);
    return { dataset, rows };
  }

  /**
   * Deletes the record and the file. Refused while an unfinished job names the dataset: its runner reads
   * the file when it starts, and again when it resumes after losing its worker, so deleting it would fail
   * that job later with a missing file instead of now with a clear answer.
   */
  async delete(caller: Principal, id: string): Promise<void> {
    const dataset = await this.get(caller, id);
    const jobs = await this.jobs.unfinishedUsingDataset(id);
    if (jobs.length > 0) {
      throw new AppError(ErrorCode.DATASET_IN_USE, `Dataset ${id} is used by unfinished job(s) ${jobs.join(', ')}; cancel them or wait`, {
        field: 'id',
        details: { jobs },
      });
    }
    await this.datasets.delete(dataset.id);
    await rm(datasetDir(this.datasetsDir, dataset.id), { recursive: true, force: true });
  }

  /**
   * For submit-time checks of job specs: the dataset exists, its file is here and the caller may use it
   * (it is theirs, or the caller is an admin), and, given the job's `environment` id, that environment
   * can use its rows (see {@link unreadableBy}: math and math-tool read the same rows). Otherwise a 400 naming `field`
   * (`environment.dataset` or `environment.val_dataset`).
   *
   * @example
   * ```ts
   * if (spec.environment.dataset) await datasets.assertUsable(caller, spec.environment.dataset, 'environment.dataset', spec.environment.id);
   * ```
   */
  async assertUsable(caller: Principal, id: string, field: string, environment?: string): Promise<DatasetEntity> {
    const dataset = isDatasetId(id) ? await this.datasets.findById(id) : null;
    if (!dataset || (dataset.ownerId !== caller.userId && !isAdmin(caller))) {
      throw new AppError(ErrorCode.VALIDATION, `${field}: no dataset ${id} of yours (upload one with POST /v1/datasets)`, { field });
    }
    try {
      datasetFile(this.datasetsDir, id);
    } catch (error) {
      throw new AppError(ErrorCode.VALIDATION, `${field}: ${(error as Error).message}`, { field });
    }
    if (environment !== undefined && environment !== dataset.environmentId) {
      const reason = await this.unreadableBy(environment, dataset);
      if (reason !== null) {
        throw new AppError(
          ErrorCode.VALIDATION,
          `${field}: dataset ${id} was checked for environment ${dataset.environmentId}; ${environment} cannot use its rows (${reason}). Upload it for ${environment}`,
          { field },
        );
      }
    }
    return dataset;
  }

  /**
   * Why a dataset checked for another environment is of no use to `environment`, or null when it is: its
   * first rows are checked again with this environment's row check (an environment not loaded here, a
   * remote one, is not judged). A sample, since a submit must stay quick; the job skips bad rows anyway.
   */
  private async unreadableBy(environment: string, dataset: DatasetEntity): Promise<string | null> {
    const env = this.registry.list().find((r) => r.id === environment && r.status === 'loaded')?.environment;
    if (!env) return null;
    return this.reader.sample(this.file(dataset), dataset.format, environment, COMPATIBILITY_SAMPLE);
  }

  private file(dataset: DatasetEntity): string {
    try {
      return datasetFile(this.datasetsDir, dataset.id);
    } catch (error) {
      throw new AppError(ErrorCode.NOT_FOUND, (error as Error).message, { field: 'id' });
    }
  }

  private environment(id: string) {
    const record = this.registry.list().find((r) => r.id === id && r.status === 'loaded');
    if (!record?.environment) {
      const known = this.registry
        .list()
        .filter((r) => r.status === 'loaded')
        .map((r) => r.id);
      throw new AppError(ErrorCode.VALIDATION, `Unknown environment ${id} (known: ${known.join(', ') || 'none'})`, { field: 'environment' });
    }
    return record.environment;
  }
}

/** Rows of a dataset re-checked when a job uses it with an environment other than the one it was checked for. */
const COMPATIBILITY_SAMPLE = 100;

function tooLarge(limit: number): AppError {
  return new AppError(ErrorCode.DATASET_TOO_LARGE, `Dataset larger than ${limit} bytes (setting dataset_max_bytes)`, {
    details: { limit_bytes: limit },
  });
}

/** Writes the body to `path`, failing past `limit` bytes. */
async function receive(body: Readable, limit: number, path: string, refusal: () => AppError): Promise<void> {
  const { stream, release } = limitedBody(body, limit, refusal);
  try {
    await pipeline(stream, createWriteStream(path, { flags: 'wx' })).catch(interrupted);
  } finally {
    release();
  }
}

/** A failed upload stream: the limit, the disk (a server fault), or the client going away mid-body. */
function interrupted(error: unknown): never {
  if (error instanceof AppError || (error as NodeJS.ErrnoException)?.syscall) throw error;
  throw new AppError(ErrorCode.VALIDATION, `The upload stopped before the whole file arrived (${(error as Error)?.message ?? error})`, {
    cause: error,
  });
}
