import { Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { CurrentUser } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { ApiErrors } from '../core/api-errors.decorator';
import { AppError, ErrorCode } from '../core/app-error';
import { drainRefused } from '../core/raw-upload-parser';
import { ZodQuery, ZodResponse } from '../core/zod-api.decorators';
import type { DatasetFormat } from '../rollout/dataset-files';
import { DATASET_UPLOAD_TYPES } from './dataset-upload-parser';
import { DatasetDto, datasetDto, DatasetPageDto, DatasetPreviewDto, ListDatasetsQuery, PreviewQuery, previewRowDto, UploadDatasetQuery, UploadedDatasetDto } from './datasets.dto';
import { DatasetsService } from './datasets.service';

@ApiTags('datasets')
@ApiBearerAuth()
@Controller('v1/datasets')
export class DatasetsController {
  constructor(private readonly datasets: DatasetsService) {}

  @Post()
  @ApiOperation({
    summary: 'Upload a dataset (JSONL or parquet) as the raw request body',
    description:
      'The body is the file itself, streamed to disk (limit: setting dataset_max_bytes, 256 MiB by default; over it: 413 ' +
      'OT_ERR_DATASET_TOO_LARGE). Every row is checked with the environment’s row check (math: a prompt and a ground truth, ' +
      'verl layout or question/answer columns; environments without a check accept any JSON object). No usable row, or ' +
      'strict=true with a bad row: 400 OT_ERR_DATASET_INVALID with the report in `details`, and nothing is kept. ' +
      'Name the returned id in a job spec as environment.dataset or environment.val_dataset.',
  })
  @ApiConsumes(...DATASET_UPLOAD_TYPES)
  @ApiBody({ description: 'The file', schema: { type: 'string', format: 'binary' } })
  @ZodResponse(201, UploadedDatasetDto)
  @ApiErrors(400, 401, 413, 415)
  async upload(@CurrentUser() caller: Principal, @ZodQuery(UploadDatasetQuery) q: UploadDatasetQuery, @Req() req: FastifyRequest): Promise<UploadedDatasetDto> {
    const body = req.body;
    if (!(body instanceof Readable)) {
      throw new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Send the file as the body with content type ${DATASET_UPLOAD_TYPES.join(', ')}`);
    }
    const format = uploadFormat(req.headers['content-type'], q.format);
    const length = Number(req.headers['content-length']);
    try {
      const { dataset, report } = await this.datasets.upload(
        caller,
        { environment: q.environment, name: q.name, format, strict: q.strict, contentLength: Number.isFinite(length) ? length : undefined },
        body,
      );
      return { dataset: datasetDto(dataset), report };
    } catch (error) {
      if (!body.readableEnded) drainRefused(body);
      throw error;
    }
  }

  @Get()
  @ApiOperation({ summary: 'List datasets, newest first (yours; all for admins)' })
  @ZodResponse(200, DatasetPageDto)
  @ApiErrors(400, 401)
  async list(@CurrentUser() caller: Principal, @ZodQuery(ListDatasetsQuery) q: z.output<typeof ListDatasetsQuery>): Promise<DatasetPageDto> {
    const { items, total } = await this.datasets.list(caller, q);
    return { items: items.map(datasetDto), page: q.page, limit: q.limit, total };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One dataset' })
  @ZodResponse(200, DatasetDto)
  @ApiErrors(400, 401, 404)
  async get(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<DatasetDto> {
    return datasetDto(await this.datasets.get(caller, id));
  }

  @Get(':id/preview')
  @ApiOperation({ summary: 'The first rows as JSON (bad rows included, as stored)' })
  @ZodResponse(200, DatasetPreviewDto)
  @ApiErrors(400, 401, 404)
  async preview(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string, @ZodQuery(PreviewQuery) q: z.output<typeof PreviewQuery>): Promise<DatasetPreviewDto> {
    const { dataset, rows } = await this.datasets.preview(caller, id, q.limit);
    return { dataset: datasetDto(dataset), rows: rows.map(previewRowDto) };
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a dataset and its file (owner or admin)',
    description: 'Refused with 409 OT_ERR_DATASET_IN_USE while a queued or running job names it (its runner reads the file at start and on resume).',
  })
  @ApiResponse({ status: 204, description: 'Deleted' })
  @ApiErrors(400, 401, 404, 409)
  async delete(@CurrentUser() caller: Principal, @Param('id', ParseUUIDPipe) id: string): Promise<void> {
    await this.datasets.delete(caller, id);
  }
}

const TYPE_FORMATS: Record<string, DatasetFormat | undefined> = {
  'application/x-ndjson': 'jsonl',
  'application/jsonl': 'jsonl',
  'application/vnd.apache.parquet': 'parquet',
  'application/octet-stream': undefined,
};

/** The format from the content type, or from `format` for octet-stream; both given must agree. */
function uploadFormat(contentType: string | undefined, format: DatasetFormat | undefined): DatasetFormat {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const byType = TYPE_FORMATS[type];
  if (byType && format && byType !== format) {
    throw new AppError(ErrorCode.VALIDATION, `format=${format} contradicts the content type ${type}`, { field: 'format' });
  }
  const resolved = byType ?? format;
  if (!resolved) throw new AppError(ErrorCode.VALIDATION, 'With application/octet-stream, say format=jsonl or format=parquet', { field: 'format' });
  return resolved;
}
