import { OpenTinkerError } from '../errors';
import { checkFile, isNode } from '../node-upload';
import { uploadFromNode } from './stream-upload';
import type { Transport } from '../transport';
import type { Dataset, DatasetFormat, DatasetPage, DatasetPreview, UploadedDataset } from '../types';
import type { RequestOptions } from './request-options';

/**
 * What {@link DatasetsApi.upload} sends: a file path (Node only), a `Blob`/`File` (browsers and Node), a
 * web `ReadableStream`, any async iterable of bytes (a Node `fs.ReadStream`), or the bytes themselves.
 * Streams and paths are sent as they are read, never gathered in memory.
 */
export type DatasetSource = string | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array;

export interface UploadDatasetOptions extends RequestOptions {
  /** Environment whose row check the file must pass, e.g. `math`. */
  environment: string;
  /** Default: the file's name (a path's last part, or a `File`'s name). */
  name?: string;
  /** Default: from the name's extension (`.jsonl`/`.ndjson` or `.parquet`). */
  format?: DatasetFormat;
  /** Refuse the file if any row is bad (default: keep it when some rows are usable). */
  strict?: boolean;
}

const CONTENT_TYPES: Record<DatasetFormat, string> = { jsonl: 'application/x-ndjson', parquet: 'application/vnd.apache.parquet' };

/**
 * Datasets (`/v1/datasets`): upload JSONL or parquet files checked against an environment, list,
 * preview and delete them. Name one in a job spec as `environment.dataset` (or `val_dataset`).
 *
 * @example
 * ```ts
 * const { dataset, report } = await client.datasets.upload('data/gsm8k-train.parquet', { environment: 'math' });
 * console.log(`${report.valid_rows}/${report.rows} usable`, report.bad_rows);
 * await client.jobs.submit({ kind: 'train', environment: { id: 'math', dataset: dataset.id }, model: { preset: 'tiny-char' } });
 * ```
 */
export class DatasetsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Streams a file to the server, which checks every row with the environment's row check. Resolves
   * with the stored dataset and the report (rows, valid rows, the first 20 bad rows with their line
   * and reason). Rejects with `OT_ERR_DATASET_INVALID` (the report in `details`) when no row is usable,
   * `OT_ERR_DATASET_TOO_LARGE` past the server's limit. Not retried (a stream cannot be replayed).
   */
  async upload(source: DatasetSource, options: UploadDatasetOptions): Promise<UploadedDataset> {
    const fileName = typeof source === 'string' ? baseName(source) : isBlob(source) ? (source as Blob & { name?: string }).name : undefined;
    const name = options.name ?? fileName;
    if (!name) throw invalid('name', 'Give a name for the dataset (options.name)');
    const format = options.format ?? formatOf(fileName ?? name);
    if (!format) throw invalid('format', `Cannot tell the format of ${fileName ?? name}: give options.format ('jsonl' or 'parquet')`);

    const query: Record<string, string> = { environment: options.environment, name, format };
    if (options.strict) query.strict = 'true';
    if (isNode() && !isBlob(source) && !(source instanceof Uint8Array)) return this.uploadFromNode(source, query, format, options.signal);
    const body = requestBody(source);
    return this.t.call(
      this.t.api.POST('/v1/datasets', {
        params: { query: query as never },
        body: body as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { 'content-type': CONTENT_TYPES[format] },
        // A streamed request body must be declared half-duplex (fetch in Chromium).
        ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
        signal: options.signal,
      }),
      options.signal,
    );
  }

  /** Paths and streams in Node go through `node:http`, whose backpressure keeps memory flat (see node-upload.ts). */
  private async uploadFromNode(
    source: string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
    query: Record<string, string>,
    format: DatasetFormat,
    signal?: AbortSignal,
  ): Promise<UploadedDataset> {
    if (typeof source === 'string') await checkFile(source, (message) => invalid('source', message));
    return uploadFromNode<UploadedDataset>(this.t, '/v1/datasets', query, CONTENT_TYPES[format], source, signal);
  }

  /** Datasets, newest first (yours; everyone's for an admin). */
  list(query: { page?: number; limit?: number } = {}, options: RequestOptions = {}): Promise<DatasetPage> {
    return this.t.call(this.t.api.GET('/v1/datasets', { params: { query }, signal: options.signal }), options.signal);
  }

  get(id: string, options: RequestOptions = {}): Promise<Dataset> {
    return this.t.call(this.t.api.GET('/v1/datasets/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }

  /** The first `limit` rows (default 20, at most 100) as JSON, bad ones with their reason. */
  preview(id: string, query: { limit?: number } = {}, options: RequestOptions = {}): Promise<DatasetPreview> {
    return this.t.call(this.t.api.GET('/v1/datasets/{id}/preview', { params: { path: { id }, query }, signal: options.signal }), options.signal);
  }

  /** Deletes the dataset and its file; `OT_ERR_DATASET_IN_USE` while an unfinished job names it. */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.t.call(this.t.api.DELETE('/v1/datasets/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }
}

function invalid(field: string, message: string): OpenTinkerError {
  return new OpenTinkerError('OT_ERR_VALIDATION', message, 0, { field });
}

function baseName(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}

function formatOf(name: string): DatasetFormat | undefined {
  if (/\.(jsonl|ndjson)$/i.test(name)) return 'jsonl';
  if (/\.parquet$/i.test(name)) return 'parquet';
  return undefined;
}

function isBlob(value: unknown): value is Blob {
  return typeof Blob !== 'undefined' && value instanceof Blob;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<Uint8Array> {
  return typeof (value as AsyncIterable<Uint8Array>)?.[Symbol.asyncIterator] === 'function';
}

function requestBody(source: DatasetSource): BodyInit {
  if (typeof source === 'string') throw invalid('source', 'File paths can be uploaded from Node only; pass a Blob or File in a browser');
  if (isBlob(source) || source instanceof Uint8Array) return source as BodyInit;
  if (source instanceof ReadableStream) return source;
  if (isAsyncIterable(source)) return iterableStream(source);
  throw invalid('source', 'Upload a file path, Blob, ReadableStream, async iterable of bytes or Uint8Array');
}

/** A web stream over an async iterable, read one chunk per pull so backpressure reaches the source. */
function iterableStream(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}
