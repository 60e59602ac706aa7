import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ErrorCode } from './app-error';

export class ErrorDto {
  @ApiProperty({ example: 400 }) statusCode!: number;
  @ApiProperty({ enum: ErrorCode, enumName: 'ErrorCode' }) code!: ErrorCode;
  @ApiProperty() message!: string;
  @ApiPropertyOptional({ description: 'Dotted path of the offending input', example: 'resources.gpus' }) field?: string;
  @ApiPropertyOptional({ description: 'Every problem found, when there are several' }) details?: unknown;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (the body names the field)',
  401: 'Missing, malformed or revoked API key',
  403: 'Not allowed for this user',
  404: 'Not found (or not yours)',
  409: 'Conflicts with the current state',
  413: 'Body too large',
  429: 'Too many failed authentications',
  503: 'Not ready',
};

/** Documents error responses; 429 goes with every 401 since failed keys are rate-limited. */
export function ApiErrors(...statuses: number[]) {
  const all = statuses.includes(401) && !statuses.includes(429) ? [...statuses, 429] : statuses;
  return applyDecorators(...all.map((status) => ApiResponse({ status, description: DESCRIPTIONS[status], type: ErrorDto })));
}
