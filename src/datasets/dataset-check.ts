import type { DatasetFormat } from '../rollout/dataset-files';
import { parquetInfo, readDatasetRows } from './dataset-rows';
import type { DatasetCaps } from './dataset-rows';
import type { DatasetReportDto } from './datasets.dto';

/**
 * What the upload check found in a file, as the API reports it: `bad_rows` are the first bad rows (at
 * most {@link MAX_BAD_ROWS}) in file order; `columns` the parquet schema's top-level names, or the keys
 * seen in JSONL objects (first seen first).
 */
export type DatasetReport = DatasetReportDto;
/** 1-based `row`: the line number for JSONL, the position for parquet. */
export type BadRow = DatasetReport['bad_rows'][number];

export const MAX_BAD_ROWS = 20;
/** JSONL rows may each have other keys; past this many the list stops growing (it is descriptive only). */
const MAX_COLUMNS = 200;

/**
 * Reads a dataset file once and checks every row with `check` (null: usable, else the reason). Throws
 * `DatasetFormatError` when the file is not readable at all in its format, `DatasetCapError` past `caps`.
 */
export async function checkDatasetFile(path: string, format: DatasetFormat, check: (row: unknown) => string | null, caps?: DatasetCaps): Promise<DatasetReport> {
  const report: DatasetReport = { rows: 0, valid_rows: 0, invalid_rows: 0, bad_rows: [], columns: [] };
  const seen = new Set<string>();
  if (format === 'parquet') for (const c of (await parquetInfo(path)).columns) seen.add(c);
  for await (const { row, value, error } of readDatasetRows(path, format, caps)) {
    report.rows += 1;
    if (format === 'jsonl' && seen.size < MAX_COLUMNS && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const key of Object.keys(value)) if (seen.size < MAX_COLUMNS) seen.add(key);
    }
    const reason = error ?? check(value);
    if (reason === null) {
      report.valid_rows += 1;
      continue;
    }
    report.invalid_rows += 1;
    if (report.bad_rows.length < MAX_BAD_ROWS) report.bad_rows.push({ row, reason });
  }
  report.columns = [...seen];
  return report;
}

/**
 * Null when one of the first `limit` rows passes `check`, else why none does: whether a dataset checked
 * for one environment is of use to another.
 */
export async function firstUsableRow(path: string, format: DatasetFormat, check: (row: unknown) => string | null, limit: number, caps?: DatasetCaps): Promise<string | null> {
  let firstReason: string | null = null;
  let seen = 0;
  for await (const { value, error } of readDatasetRows(path, format, caps)) {
    const reason = error ?? check(value);
    if (reason === null) return null;
    firstReason ??= reason;
    if (++seen >= limit) break;
  }
  return `none of its first ${seen} rows is usable: ${firstReason ?? 'no rows'}`;
}
