import { applyDecorators } from '@nestjs/common';
import { ErrorBody } from './app-error';
import { jsonResponse } from './zod-api.decorators';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (the body names the field)',
  401: 'Missing, malformed or revoked API key',
  403: 'Not allowed for this user',
  404: 'Not found (or not yours)',
  409: 'Conflicts with the current state',
  413: 'Body too large',
  415: 'Unsupported media type',
  429: 'Too many requests: failed authentications (and, submitting a job, queued jobs past the per-user limit)',
  503: 'Not ready',
};

/** Documents error responses; 429 goes with every 401 since failed keys are rate-limited. */
export function ApiErrors(...statuses: number[]) {
  const all = statuses.includes(401) && !statuses.includes(429) ? [...statuses, 429] : statuses;
  return applyDecorators(...all.map((status) => jsonResponse(status, ErrorBody, DESCRIPTIONS[status])));
}
