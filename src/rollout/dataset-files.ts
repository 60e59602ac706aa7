import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Dataset formats the API accepts, by file extension. */
export const DATASET_FORMATS = ['jsonl', 'parquet'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

// Ids come from specs and URLs; only the uuid shape the API mints may reach the file system.
const DATASET_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isDatasetId(id: string): boolean {
  return DATASET_ID.test(id);
}

/** The folder that holds one dataset's file: `<datasetsDir>/<id>`. */
export function datasetDir(datasetsDir: string, id: string): string {
  if (!isDatasetId(id)) throw new Error(`invalid dataset id "${id}" (expected a uuid)`);
  return join(datasetsDir, id);
}

/** Where a dataset of the given format is (or will be) stored. */
export function datasetPath(datasetsDir: string, id: string, format: DatasetFormat): string {
  return join(datasetDir(datasetsDir, id), `data.${format}`);
}

/**
 * The stored file of dataset `id`: `<datasetsDir>/<id>/data.jsonl` or `data.parquet`, whichever exists.
 * Pure fs, so the job runner child process can resolve ids without the API.
 */
export function datasetFile(datasetsDir: string, id: string): string {
  for (const format of DATASET_FORMATS) {
    const path = datasetPath(datasetsDir, id, format);
    if (existsSync(path)) return path;
  }
  throw new Error(`dataset ${id} has no file on this server (deleted, or uploaded to another server)`);
}
