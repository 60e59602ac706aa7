import type { FastifyInstance } from 'fastify';

/** Content types `POST /v1/datasets` accepts; its body is the file itself. */
export const DATASET_UPLOAD_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/vnd.apache.parquet', 'application/octet-stream'];

const UPLOAD_ROUTE = '/v1/datasets';

/**
 * Hands the upload route its body as the raw request stream, so the file goes to disk chunk by chunk
 * and Fastify's in-memory `bodyLimit` does not apply (the service enforces `dataset_max_bytes`). Any
 * other route sent these types answers 415, as it did before this parser existed.
 */
export function registerDatasetUploadParser(fastify: FastifyInstance): void {
  fastify.addContentTypeParser(DATASET_UPLOAD_TYPES, (request, payload, done) => {
    if (request.method === 'POST' && request.routeOptions.url === UPLOAD_ROUTE) {
      done(null, payload);
      return;
    }
    const error = new Error(`Unsupported Media Type: ${request.headers['content-type']}`) as Error & { statusCode: number; code: string };
    error.statusCode = 415;
    error.code = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
    done(error, undefined);
  });
}
