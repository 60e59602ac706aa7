import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { iso } from '../core/database/columns';
import { PageQuery } from '../core/page-query.dto';
import type { BadRow, DatasetReport } from './dataset-check';
import { DATASET_FORMATS } from './dataset-files';
import type { DatasetFormat } from './dataset-files';
import type { DatasetRow } from './dataset-rows';
import type { DatasetEntity } from './dataset.entity';

export class UploadDatasetQuery {
  @ApiProperty({ description: 'Environment whose row check the file must pass (GET /v1/environments)', example: 'math' })
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  environment!: string;

  @ApiProperty({ description: 'A name for you to recognise it by', example: 'gsm8k-train', maxLength: 128 })
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  @Matches(/^[^\u0000-\u001f\u007f]+$/, { message: 'name must not contain control characters' })
  name!: string;

  @ApiPropertyOptional({
    enum: DATASET_FORMATS,
    description: 'Needed with `application/octet-stream`; otherwise the content type decides (and must agree)',
  })
  @IsOptional()
  @IsIn(DATASET_FORMATS)
  format?: DatasetFormat;

  @ApiPropertyOptional({ description: 'Refuse the file when any row is bad (default: keep it when some rows are usable)', default: false })
  @IsOptional()
  @Transform(({ value }) => (value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value))
  @IsBoolean()
  strict: boolean = false;
}

/** `GET /v1/datasets` pages like the job list. */
export class ListDatasetsQuery extends PageQuery {}

export class PreviewQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit: number = 20;
}

export class BadRowDto {
  @ApiProperty({ description: 'Line number (JSONL) or 1-based position (parquet)' }) row!: number;
  @ApiProperty({ example: 'no ground truth (reward_model.ground_truth, ground_truth, extra_info.ground_truth or answer)' }) reason!: string;
}

export class DatasetReportDto {
  @ApiProperty() rows!: number;
  @ApiProperty() valid_rows!: number;
  @ApiProperty() invalid_rows!: number;
  @ApiProperty({ type: [BadRowDto], description: 'The first 20 bad rows' }) bad_rows!: BadRow[];
  @ApiProperty({ type: [String], description: 'Top-level columns (parquet schema, or keys seen in JSONL rows)' }) columns!: string[];

  static of(r: DatasetReport): DatasetReportDto {
    return { rows: r.rows, valid_rows: r.valid_rows, invalid_rows: r.invalid_rows, bad_rows: r.bad_rows, columns: r.columns };
  }
}

export class DatasetDto {
  @ApiProperty({ format: 'uuid', description: 'Name it in a job spec as environment.dataset or environment.val_dataset' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ format: 'uuid' }) owner_id!: string;
  @ApiProperty({ example: 'math' }) environment!: string;
  @ApiProperty({ enum: DATASET_FORMATS }) format!: DatasetFormat;
  @ApiProperty() rows!: number;
  @ApiProperty({ description: 'Rows the environment will skip' }) invalid_rows!: number;
  @ApiProperty({ description: 'Size of the stored file' }) bytes!: number;
  @ApiProperty({ type: [String] }) columns!: string[];
  @ApiProperty({ type: [BadRowDto], description: 'The first 20 bad rows found at upload' }) bad_rows!: BadRow[];
  @ApiProperty({ format: 'date-time' }) created_at!: string;

  static of(d: DatasetEntity): DatasetDto {
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
}

export class UploadedDatasetDto {
  @ApiProperty({ type: DatasetDto }) dataset!: DatasetDto;
  @ApiProperty({ type: DatasetReportDto }) report!: DatasetReportDto;
}

export class DatasetPageDto {
  @ApiProperty({ type: [DatasetDto] }) items!: DatasetDto[];
  @ApiProperty() page!: number;
  @ApiProperty() limit!: number;
  @ApiProperty() total!: number;
}

export class PreviewRowDto {
  @ApiProperty({ description: 'Line number (JSONL) or 1-based position (parquet)' }) row!: number;
  @ApiProperty({ description: 'The row as JSON (null when the line is not JSON)', nullable: true, type: 'object', additionalProperties: true })
  value!: unknown;
  @ApiPropertyOptional({ description: 'Why the line is not JSON' }) error?: string;

  static of(r: DatasetRow): PreviewRowDto {
    return r.error === undefined ? { row: r.row, value: r.value } : { row: r.row, value: r.value, error: r.error };
  }
}

export class DatasetPreviewDto {
  @ApiProperty({ type: DatasetDto }) dataset!: DatasetDto;
  @ApiProperty({ type: [PreviewRowDto] }) rows!: PreviewRowDto[];
}
