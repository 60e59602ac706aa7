import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { DEFAULT_JSON_MAX_DEPTH, tooDeepAt } from '@opentinker/env-sdk';
import { z } from 'zod';
import type { DatasetFormat } from '../rollout/dataset-files';

/** One row of a dataset file: 1-based `row` (the line number for JSONL), its value, or why it is not JSON. */
export const DatasetRow = z.object({ row: z.number().int(), value: z.unknown(), error: z.string().optional() });
export type DatasetRow = z.output<typeof DatasetRow>;

/** Bounds on what reading a file may hold: a hostile file is refused at the bound, never parsed past it. */
export const DatasetCaps = z.object({
  /** Rows (parquet: from the footer, before anything is decoded). */
  maxRows: z.number().int(),
  /** Bytes of one JSONL line. */
  maxLineBytes: z.number().int(),
  /** Objects and arrays one row may nest (setting json_max_depth; default 64): a deeper row is a bad row. */
  maxDepth: z.number().int().optional(),
});
export type DatasetCaps = z.output<typeof DatasetCaps>;

/** Thrown when a file is past one of its {@link DatasetCaps}: names the cap and the setting that raises it. */
export class DatasetCapError extends Error {
  constructor(
    message: string,
    readonly setting: 'dataset_max_rows' | 'dataset_max_line_bytes',
  ) {
    super(message);
  }
}

/**
 * The rows of a stored dataset file, streamed. Numbering and value conversion follow the math
 * environment's loader (`readRows` in @opentinker/env-math), so a row the upload check reports as row 7
 * is row 7 in a job's log too: JSONL rows are numbered by line (blank lines skipped), parquet rows by
 * position. With `caps`, a file past them throws {@link DatasetCapError}. A row nested deeper than
 * `caps.maxDepth` comes with an error instead of its value: whatever reads a row next (a row check,
 * JSON serialisation) recurses once per level.
 */
export async function* readDatasetRows(path: string, format: DatasetFormat, caps?: DatasetCaps): AsyncGenerator<DatasetRow> {
  const maxDepth = caps?.maxDepth ?? DEFAULT_JSON_MAX_DEPTH;
  for await (const row of format === 'jsonl' ? readJsonlRows(path, caps) : readParquetRows(path, caps)) {
    if (row.error === undefined && tooDeepAt(row.value, maxDepth)) {
      yield {
        row: row.row,
        value: null,
        error: `${format === 'jsonl' ? 'line' : 'row'} ${row.row} nests objects and arrays deeper than ${maxDepth} levels (setting json_max_depth)`,
      };
    } else yield row;
  }
}

async function* readJsonlRows(path: string, caps?: DatasetCaps): AsyncGenerator<DatasetRow> {
  let n = 0;
  let rows = 0;
  for await (const raw of jsonlLines(path, caps?.maxLineBytes ?? Infinity)) {
    n += 1;
    const line = (n === 1 ? raw.replace(/^\uFEFF/, '') : raw).trim();
    if (line === '') continue;
    if (caps && ++rows > caps.maxRows) throw rowCap(caps.maxRows);
    try {
      yield { row: n, value: JSON.parse(line) };
    } catch (e) {
      yield { row: n, value: null, error: `line ${n} is not JSON (${(e as Error).message.slice(0, 200)})` };
    }
  }
}

/**
 * The lines of a file (LF or CRLF), never holding more than `maxBytes` of one line: a longer line
 * throws as soon as it passes the bound, whatever the file's size.
 */
async function* jsonlLines(path: string, maxBytes: number): AsyncGenerator<string> {
  let parts: Buffer[] = [];
  let held = 0;
  let n = 1;
  const tooLong = () => new DatasetCapError(`line ${n} is longer than ${maxBytes} bytes (setting dataset_max_line_bytes)`, 'dataset_max_line_bytes');
  const take = (tail: Buffer): string => {
    const line = Buffer.concat([...parts, tail]).toString('utf8');
    parts = [];
    held = 0;
    n += 1;
    return line.endsWith('\r') ? line.slice(0, -1) : line;
  };
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (held + (nl - start) > maxBytes) throw tooLong();
      yield take(chunk.subarray(start, nl));
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    held += rest.length;
    if (held > maxBytes) throw tooLong();
    if (rest.length > 0) parts.push(rest);
  }
  if (held > 0) yield take(Buffer.alloc(0));
}

function rowCap(max: number): DatasetCapError {
  return new DatasetCapError(`the file has more than ${max} rows (setting dataset_max_rows)`, 'dataset_max_rows');
}

/** Thrown when a file is not readable parquet (bad magic, corrupt footer or pages). */
export class DatasetFormatError extends Error {}

/** Top-level column names and row count of a parquet file, from its footer. */
export async function parquetInfo(path: string): Promise<{ rows: number; columns: string[] }> {
  const { metadata } = await openParquet(path);
  return {
    rows: Number(metadata.num_rows),
    columns: topLevelColumns(metadata.schema),
  };
}

/**
 * One row group at a time: hyparquet decodes whole column chunks, so reading a group in smaller slices
 * would decode it again for every slice; a group is what the writer chose to hold in memory at once.
 */
async function* readParquetRows(path: string, caps?: DatasetCaps): AsyncGenerator<DatasetRow> {
  const { hyparquet, file, metadata } = await openParquet(path);
  // A few kilobytes of dictionary-encoded parquet can declare millions of rows: refused from the footer.
  if (caps && Number(metadata.num_rows) > caps.maxRows) throw rowCap(caps.maxRows);
  let start = 0;
  for (const group of metadata.row_groups) {
    const end = start + Number(group.num_rows);
    let objects: Record<string, unknown>[];
    try {
      objects = await hyparquet.parquetReadObjects({ file, metadata, rowStart: start, rowEnd: end });
    } catch (error) {
      throw new DatasetFormatError(`parquet rows ${start + 1}-${end} cannot be decoded: ${(error as Error).message}`);
    }
    for (let i = 0; i < objects.length; i++) yield { row: start + i + 1, value: parquetValueToJson(objects[i]) };
    start = end;
  }
}

async function openParquet(path: string) {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const magic = Buffer.alloc(4);
    const tail = Buffer.alloc(4);
    if (size >= 12) {
      await handle.read(magic, 0, 4, 0);
      await handle.read(tail, 0, 4, size - 4);
    }
    if (magic.toString('latin1') !== 'PAR1' || tail.toString('latin1') !== 'PAR1') {
      throw new DatasetFormatError('not a parquet file (it must start and end with PAR1)');
    }
  } finally {
    await handle.close();
  }
  const hyparquet = await import('hyparquet');
  const file = await hyparquet.asyncBufferFromFile(path);
  try {
    const metadata = await hyparquet.parquetMetadataAsync(file);
    return { hyparquet, file, metadata };
  } catch (error) {
    throw new DatasetFormatError(`the parquet footer cannot be read: ${(error as Error).message}`);
  }
}

/** The schema's root is element 0; its `num_children` direct children follow, each with its own subtree. */
function topLevelColumns(schema: ReadonlyArray<{ name: string; num_children?: number }>): string[] {
  const names: string[] = [];
  let i = 1;
  const skip = (): void => {
    const children = schema[i]?.num_children ?? 0;
    i += 1;
    for (let c = 0; c < children; c++) skip();
  };
  const count = schema[0]?.num_children ?? 0;
  for (let c = 0; c < count && i < schema.length; c++) {
    names.push(schema[i].name);
    skip();
  }
  return names;
}

/**
 * Parquet values as plain JSON, the way the math environment's loader converts them: int64 to a number
 * (a string when beyond 2^53), bytes to UTF-8 text, dates to ISO strings.
 */
export function parquetValueToJson(value: unknown, depth = 0): unknown {
  if (depth > 64 || value === null || value === undefined) return null;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value) || ArrayBuffer.isView(value)) return Array.from(value as ArrayLike<unknown>, (v) => parquetValueToJson(v, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = parquetValueToJson(v, depth + 1);
    return out;
  }
  return null;
}
