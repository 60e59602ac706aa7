import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { askOnce } from '../core/one-shot-child';
import { REGISTRY_PATHS } from '../registry/environment-registry.service';
import type { RegistryPaths } from '../registry/registry-loader';
import type { DatasetReport } from './dataset-check';
import { DatasetReaderReply, type DatasetReaderRequest, type EnvRef } from './dataset-reader-protocol';
import type { DatasetFormat } from '../rollout/dataset-files';
import type { DatasetCaps, DatasetRow } from './dataset-rows';

/** Longest a dataset read may take before its thread is stopped. */
const READ_TIMEOUT_MS = 10 * 60_000;

/**
 * Reads dataset files off the API's event loop: each read runs in its own child process with a capped
 * heap (setting dataset_parse_memory_mb), within the row and line caps (dataset_max_rows,
 * dataset_max_line_bytes). A file past a cap is a 413 naming the setting, one that breaks the heap cap
 * too; a file that is not readable in its format is a 400. The API keeps answering meanwhile.
 */
@Injectable()
export class DatasetReader {
  constructor(
    private readonly config: AppConfig,
    @Inject(REGISTRY_PATHS) private readonly registryPaths: RegistryPaths,
  ) {}

  get caps(): DatasetCaps {
    return { maxRows: this.config.values.dataset_max_rows, maxLineBytes: this.config.values.dataset_max_line_bytes, maxDepth: this.config.values.json_max_depth };
  }

  /** Every row checked with `environment`'s row check. */
  async check(path: string, format: DatasetFormat, environment: string): Promise<DatasetReport> {
    const reply = await this.run({ op: 'check', path, format, caps: this.caps, environment: this.env(environment) });
    return (reply as { report: DatasetReport }).report;
  }

  /** The first `limit` rows as stored. */
  async preview(path: string, format: DatasetFormat, limit: number): Promise<DatasetRow[]> {
    return ((await this.run({ op: 'preview', path, format, caps: this.caps, limit })) as { rows: DatasetRow[] }).rows;
  }

  /** Null when one of the first `limit` rows is usable by `environment`, else why none is. */
  async sample(path: string, format: DatasetFormat, environment: string, limit: number): Promise<string | null> {
    return ((await this.run({ op: 'sample', path, format, caps: this.caps, limit, environment: this.env(environment) })) as { reason: string | null }).reason;
  }

  private env(id: string): EnvRef {
    return { id, hostRoot: this.registryPaths.hostRoot, pluginsDir: this.registryPaths.pluginsDir };
  }

  private async run(request: DatasetReaderRequest): Promise<Exclude<DatasetReaderReply, { failure: unknown }>> {
    const memoryMb = this.config.values.dataset_parse_memory_mb;
    const outcome = await askOnce(this.config.install.datasetReaderEntry, request, DatasetReaderReply, 'The dataset reader', {
      memoryMb,
      timeoutMs: READ_TIMEOUT_MS,
      serialization: 'advanced',
    });
    if ('timedOut' in outcome) throw new AppError(ErrorCode.DATASET_TOO_LARGE, `Reading the dataset took longer than ${READ_TIMEOUT_MS / 60_000} minutes`);
    if ('startFailed' in outcome) throw new AppError(ErrorCode.INTERNAL, `Could not start the dataset reader: ${outcome.startFailed}`);
    if ('outOfMemory' in outcome) {
      throw new AppError(ErrorCode.DATASET_TOO_LARGE, `Dataset refused: reading it needs more than ${memoryMb} MiB (setting dataset_parse_memory_mb)`, {
        details: { setting: 'dataset_parse_memory_mb' },
      });
    }
    if ('stopped' in outcome) throw new AppError(ErrorCode.INTERNAL, `The dataset reader stopped (${outcome.stopped})`);
    if ('badReply' in outcome) throw new AppError(ErrorCode.INTERNAL, outcome.badReply);
    const reply = outcome.reply;
    if (!('failure' in reply)) return reply;
    const f = reply.failure;
    if (f.kind === 'cap') throw new AppError(ErrorCode.DATASET_TOO_LARGE, `Dataset refused: ${f.message}`, { details: { setting: f.setting } });
    if (f.kind === 'format') {
      throw new AppError(ErrorCode.DATASET_INVALID, `Not a readable ${request.format} file: ${f.message}`, {
        field: 'format',
        details: { rows: 0, valid_rows: 0, invalid_rows: 0, bad_rows: [], columns: [] } satisfies DatasetReport,
      });
    }
    throw new AppError(ErrorCode.INTERNAL, `Could not read the dataset: ${f.message}`);
  }
}
