import { z } from 'zod';
import { iso } from '../core/columns';
import { PageQuery, pageOf } from '../core/page-query.dto';
import { DATASET_FORMATS } from '../rollout/dataset-files';
import type { DatasetRow } from './dataset-rows';
import type { DatasetEntity } from './dataset.entity';

/** The name an upload (a dataset, a model folder) is given, for its owner to recognise it by. */
export const UploadName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^\u0000-\u001f\u007f]+$/, { message: 'name must not contain control characters' })
  .describe('A name for you to recognise it by');

export const UploadDatasetQuery = z
  .object({
    environment: z.string().min(1).max(128).describe('Environment whose row check the file must pass (GET /v1/environments)').meta({ example: 'math' }),
    name: UploadName.meta({ example: 'gsm8k-train' }),
    format: z.enum(DATASET_FORMATS).optional().describe('Needed with `application/octet-stream`; otherwise the content type decides (and must agree)'),
    strict: z
      .stringbool({ truthy: ['true', '1'], falsy: ['false', '0'] })
      .default(false)
      .describe('Refuse the file when any row is bad (default: keep it when some rows are usable)')
      // What a client sends: a boolean, written `true` or `false` (`1` and `0` are read too).
      .meta({ type: 'boolean', default: false }),
  })
  .strict();
export type UploadDatasetQuery = z.output<typeof UploadDatasetQuery>;

/** `GET /v1/datasets` pages like the job list. */
export const ListDatasetsQuery = PageQuery;

export const PreviewQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }).strict();

const BadRowDto = z
  .object({
    row: z.number().int().describe('Line number (JSONL) or 1-based position (parquet)'),
    reason: z.string().meta({ example: 'no ground truth (reward_model.ground_truth, ground_truth, extra_info.ground_truth or answer)' }),
  })
  .meta({ id: 'BadRowDto' });

/** What the upload check found in a file. */
export const DatasetReportDto = z
  .object({
    rows: z.number().int(),
    valid_rows: z.number().int(),
    invalid_rows: z.number().int(),
    bad_rows: z.array(BadRowDto).describe('The first 20 bad rows'),
    columns: z.array(z.string()).describe('Top-level columns (parquet schema, or keys seen in JSONL rows)'),
  })
  .meta({ id: 'DatasetReportDto' });
export type DatasetReportDto = z.output<typeof DatasetReportDto>;

export const DatasetDto = z
  .object({
    id: z.uuid().describe('Name it in a job spec as environment.dataset or environment.val_dataset'),
    name: z.string(),
    owner_id: z.uuid(),
    environment: z.string().meta({ example: 'math' }),
    format: z.enum(DATASET_FORMATS),
    rows: z.number().int(),
    invalid_rows: z.number().int().describe('Rows the environment will skip'),
    bytes: z.number().int().describe('Size of the stored file'),
    columns: z.array(z.string()),
    bad_rows: z.array(BadRowDto).describe('The first 20 bad rows found at upload'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'DatasetDto' });
export type DatasetDto = z.output<typeof DatasetDto>;

export function datasetDto(d: DatasetEntity): DatasetDto {
  return {
    id: d.id,
    name: d.name,
    owner_id: d.ownerId,
    environment: d.environmentId,
    format: d.format,
    rows: d.rowCount,
    invalid_rows: d.invalidRowCount,
    bytes: d.bytes,
    columns: d.columns,
    bad_rows: d.badRows,
    created_at: iso(d.createdAt)!,
  };
}

export const UploadedDatasetDto = z.object({ dataset: DatasetDto, report: DatasetReportDto }).meta({ id: 'UploadedDatasetDto' });
export type UploadedDatasetDto = z.output<typeof UploadedDatasetDto>;

export const DatasetPageDto = pageOf(DatasetDto).meta({ id: 'DatasetPageDto' });
export type DatasetPageDto = z.output<typeof DatasetPageDto>;

const PreviewRowDto = z
  .object({
    row: z.number().int().describe('Line number (JSONL) or 1-based position (parquet)'),
    value: z.unknown().describe('The row as JSON (null when the line is not JSON)'),
    error: z.string().optional().describe('Why the line is not JSON'),
  })
  .meta({ id: 'PreviewRowDto' });
type PreviewRowDto = z.output<typeof PreviewRowDto>;

export function previewRowDto(r: DatasetRow): PreviewRowDto {
  return r.error === undefined ? { row: r.row, value: r.value } : { row: r.row, value: r.value, error: r.error };
}

export const DatasetPreviewDto = z.object({ dataset: DatasetDto, rows: z.array(PreviewRowDto) }).meta({ id: 'DatasetPreviewDto' });
export type DatasetPreviewDto = z.output<typeof DatasetPreviewDto>;
