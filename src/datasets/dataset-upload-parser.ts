import type { FastifyInstance } from 'fastify';
import { allowRawUpload } from '../core/raw-upload-parser';

/** Content types `POST /v1/datasets` accepts; its body is the file itself. */
export const DATASET_UPLOAD_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/vnd.apache.parquet', 'application/octet-stream'];

/**
 * Hands the upload route its body as the raw request stream, so the file goes to disk chunk by chunk
 * and Fastify's in-memory `bodyLimit` does not apply (the service enforces `dataset_max_bytes`).
 */
export function registerDatasetUploadParser(fastify: FastifyInstance): void {
  allowRawUpload(fastify, '/v1/datasets', DATASET_UPLOAD_TYPES);
}
